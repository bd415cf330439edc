// loss = sum(if sum(x) > 0 { relu(x) * w } else { tanh(x) + w })^2 ...
{
  (%x) = "data" () {name:"x", shape:[2,3], dtype:f64} : () -> tensor<2x3xf64>
  (%w) = "parameter" () {name:"w", shape:[3], dtype:f64} : () -> tensor<3xf64>
  (%zero) = "full" () {shape:[], value:0.0, dtype:f64} : () -> tensor<f64>
  (%s) = "reduce_sum" (%x) {axes:[], keepdim:false} : (tensor<2x3xf64>) -> tensor<f64>
  (%c) = "greater_than" (%s, %zero) : (tensor<f64>, tensor<f64>) -> tensor<i1>
  (%r) = "if" (%c) : (tensor<i1>) -> tensor<2x3xf64> {
    (%a) = "relu" (%x) : (tensor<2x3xf64>) -> tensor<2x3xf64>
    (%b) = "multiply" (%a, %w) : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
    () = "yield" (%b) : (tensor<2x3xf64>) -> ()
  } else {
    (%t) = "tanh" (%x) : (tensor<2x3xf64>) -> tensor<2x3xf64>
    (%u) = "add" (%t, %w) : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
    () = "yield" (%u) : (tensor<2x3xf64>) -> ()
  }
  (%sq) = "multiply" (%r, %r) : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  (%loss) = "reduce_sum" (%sq) {axes:[], keepdim:false} : (tensor<2x3xf64>) -> tensor<f64>
  () = "fetch" (%loss) {name:"loss"} : (tensor<f64>) -> ()
}
