// h = x; repeat n times: h = tanh(h @ w + x); loss = sum(h * h).
{
  (%x) = "data" () {name:"x", shape:[2,3], dtype:f64} : () -> tensor<2x3xf64>
  (%w) = "data" () {name:"w", shape:[3,3], dtype:f64} : () -> tensor<3x3xf64>
  (%n) = "data" () {name:"n", shape:[], dtype:i64} : () -> tensor<i64>
  (%i0) = "full" () {shape:[], value:0, dtype:i64} : () -> tensor<i64>
  (%one) = "full" () {shape:[], value:1, dtype:i64} : () -> tensor<i64>
  (%c0) = "less_than" (%i0, %n) : (tensor<i64>, tensor<i64>) -> tensor<i1>
  (%iN, %hN) = "while" (%c0, %i0, %x) : (tensor<i1>, tensor<i64>, tensor<2x3xf64>) -> (tensor<i64>, tensor<2x3xf64>) {
  ^(%i: tensor<i64>, %h: tensor<2x3xf64>):
    (%hw) = "matmul" (%h, %w) : (tensor<2x3xf64>, tensor<3x3xf64>) -> tensor<2x3xf64>
    (%z) = "add" (%hw, %x) : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
    (%h1) = "tanh" (%z) : (tensor<2x3xf64>) -> tensor<2x3xf64>
    (%i1) = "add" (%i, %one) : (tensor<i64>, tensor<i64>) -> tensor<i64>
    (%c1) = "less_than" (%i1, %n) : (tensor<i64>, tensor<i64>) -> tensor<i1>
    () = "yield" (%c1, %i1, %h1) : (tensor<i1>, tensor<i64>, tensor<2x3xf64>) -> ()
  }
  (%sq) = "multiply" (%hN, %hN) : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  (%loss) = "reduce_sum" (%sq) {axes:[], keepdim:false} : (tensor<2x3xf64>) -> tensor<f64>
  () = "fetch" (%loss) {name:"loss"} : (tensor<f64>) -> ()
  () = "fetch" (%hN) {name:"h"} : (tensor<2x3xf64>) -> ()
}
