// A stack of tensors of unknown rank (tensor<*xf32>), as an ONNX sequence
// holds items of several ranks.
{
  (%x) = "data" () {name:"x", shape:[2], dtype:f32} : () -> tensor<2xf32>
  (%y) = "data" () {name:"y", shape:[], dtype:f32} : () -> tensor<f32>
  (%s) = "stack_new" () {elem:tensor<*xf32>} : () -> stack<tensor<*xf32>>
  (%s1) = "stack_push" (%s, %x) : (stack<tensor<*xf32>>, tensor<2xf32>) -> stack<tensor<*xf32>>
  (%s2) = "stack_push" (%s1, %y) : (stack<tensor<*xf32>>, tensor<f32>) -> stack<tensor<*xf32>>
  (%s3, %top) = "stack_pop" (%s2) : (stack<tensor<*xf32>>) -> (stack<tensor<*xf32>>, tensor<*xf32>)
}
