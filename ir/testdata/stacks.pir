// Stack types: what reverse-mode differentiation keeps per while iteration.
{
  (%n) = "data" () {name:"n", shape:[], dtype:i64} : () -> tensor<i64>
  (%x) = "data" () {name:"x", shape:[-1,4], dtype:f32} : () -> tensor<?x4xf32>
  (%s0) = "stack_new" () {elem:tensor<?x4xf32>} : () -> stack<tensor<?x4xf32>>
  (%ss0) = "stack_new" () {elem:stack<tensor<?x4xf32>>} : () -> stack<stack<tensor<?x4xf32>>>
  (%i0) = "full" () {shape:[], value:0, dtype:i64} : () -> tensor<i64>
  (%one) = "full" () {shape:[], value:1, dtype:i64} : () -> tensor<i64>
  (%c0) = "less_than" (%i0, %n) : (tensor<i64>, tensor<i64>) -> tensor<i1>
  (%iN, %sN) = "while" (%c0, %i0, %s0) : (tensor<i1>, tensor<i64>, stack<tensor<?x4xf32>>) -> (tensor<i64>, stack<tensor<?x4xf32>>) {
  ^(%i: tensor<i64>, %s: stack<tensor<?x4xf32>>):
    (%r) = "relu" (%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
    (%s1) = "stack_push" (%s, %r) : (stack<tensor<?x4xf32>>, tensor<?x4xf32>) -> stack<tensor<?x4xf32>>
    (%i1) = "add" (%i, %one) : (tensor<i64>, tensor<i64>) -> tensor<i64>
    (%c1) = "less_than" (%i1, %n) : (tensor<i64>, tensor<i64>) -> tensor<i1>
    () = "yield" (%c1, %i1, %s1) : (tensor<i1>, tensor<i64>, stack<tensor<?x4xf32>>) -> ()
  }
  (%ss1) = "stack_push" (%ss0, %sN) : (stack<stack<tensor<?x4xf32>>>, stack<tensor<?x4xf32>>) -> stack<stack<tensor<?x4xf32>>>
  (%ss2, %top) = "stack_pop" (%ss1) : (stack<stack<tensor<?x4xf32>>>) -> (stack<stack<tensor<?x4xf32>>>, stack<tensor<?x4xf32>>)
  (%s2, %last) = "stack_pop" (%top) : (stack<tensor<?x4xf32>>) -> (stack<tensor<?x4xf32>>, tensor<?x4xf32>)
  () = "fetch" (%last) {name:"last"} : (tensor<?x4xf32>) -> ()
}
