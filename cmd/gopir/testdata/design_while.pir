// The while example of docs/ir.md: sum i for i < n.
{
  (%n) = "data" () {name:"n", shape:[], dtype:i64} : () -> tensor<i64>
  (%i0) = "full" () {shape:[], value:0, dtype:i64} : () -> tensor<i64>
  (%a0) = "full" () {shape:[], value:0.0, dtype:f32} : () -> tensor<f32>
  (%c0) = "less_than" (%i0, %n) : (tensor<i64>, tensor<i64>) -> tensor<i1>
  (%iN, %aN) = "while" (%c0, %i0, %a0) : (tensor<i1>, tensor<i64>, tensor<f32>) -> (tensor<i64>, tensor<f32>) {
  ^(%i: tensor<i64>, %a: tensor<f32>):
    (%one) = "full" () {shape:[], value:1, dtype:i64} : () -> tensor<i64>
    (%i1) = "add" (%i, %one) : (tensor<i64>, tensor<i64>) -> tensor<i64>
    (%fi) = "cast" (%i) {dtype:f32} : (tensor<i64>) -> tensor<f32>
    (%a1) = "add" (%a, %fi) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    (%c1) = "less_than" (%i1, %n) : (tensor<i64>, tensor<i64>) -> tensor<i1>
    () = "yield" (%c1, %i1, %a1) : (tensor<i1>, tensor<i64>, tensor<f32>) -> ()
  }
  () = "fetch" (%aN) {name:"sum"} : (tensor<f32>) -> ()
}
