// One input of each kind for the feed sweep: a static and a dynamic data
// op and a parameter.
{
  (%x) = "data" () {name:"x", shape:[2,3], dtype:f32} : () -> tensor<2x3xf32>
  (%y) = "data" () {name:"y", shape:[-1,3], dtype:f32} : () -> tensor<?x3xf32>
  (%w) = "parameter" () {name:"w", shape:[2,3], dtype:f32} : () -> tensor<2x3xf32>
  (%s) = "add" (%x, %w) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  (%t) = "reduce_sum" (%y) {axes:[], keepdim:false} : (tensor<?x3xf32>) -> tensor<f32>
  () = "fetch" (%s) {name:"s"} : (tensor<2x3xf32>) -> ()
  () = "fetch" (%t) {name:"t"} : (tensor<f32>) -> ()
}
