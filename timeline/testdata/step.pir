// A small step with an if and a while: the picture's and trace's tests run
// it. Its buffers are large enough to draw.
{
  (%x) = "data" () {name:"x", shape:[-1,256], dtype:f32} : () -> tensor<?x256xf32>
  (%n) = "data" () {name:"n", shape:[], dtype:i64} : () -> tensor<i64>
  (%zero) = "full" () {shape:[], value:0, dtype:i64} : () -> tensor<i64>
  (%e) = "exp" (%x) : (tensor<?x256xf32>) -> tensor<?x256xf32>
  (%t) = "tanh" (%x) : (tensor<?x256xf32>) -> tensor<?x256xf32>
  (%s) = "add" (%e, %t) : (tensor<?x256xf32>, tensor<?x256xf32>) -> tensor<?x256xf32>
  (%p) = "greater_than" (%n, %zero) : (tensor<i64>, tensor<i64>) -> tensor<i1>
  (%r) = "if" (%p) : (tensor<i1>) -> tensor<?x256xf32> {
    (%c0) = "less_than" (%zero, %n) : (tensor<i64>, tensor<i64>) -> tensor<i1>
    (%iN, %accN) = "while" (%c0, %zero, %s) : (tensor<i1>, tensor<i64>, tensor<?x256xf32>) -> (tensor<i64>, tensor<?x256xf32>) {
    ^(%i: tensor<i64>, %acc: tensor<?x256xf32>):
      (%one) = "full" () {shape:[], value:1, dtype:i64} : () -> tensor<i64>
      (%i1) = "add" (%i, %one) : (tensor<i64>, tensor<i64>) -> tensor<i64>
      (%sq) = "multiply" (%acc, %acc) : (tensor<?x256xf32>, tensor<?x256xf32>) -> tensor<?x256xf32>
      (%acc1) = "tanh" (%sq) : (tensor<?x256xf32>) -> tensor<?x256xf32>
      (%c1) = "less_than" (%i1, %n) : (tensor<i64>, tensor<i64>) -> tensor<i1>
      () = "yield" (%c1, %i1, %acc1) : (tensor<i1>, tensor<i64>, tensor<?x256xf32>) -> ()
    }
    () = "yield" (%accN) : (tensor<?x256xf32>) -> ()
  } else {
    () = "yield" (%s) : (tensor<?x256xf32>) -> ()
  }
  (%sum) = "reduce_sum" (%r) {axes:[], keepdim:false} : (tensor<?x256xf32>) -> tensor<f32>
  () = "fetch" (%sum) {name:"sum"} : (tensor<f32>) -> ()
}
