{
  (%0) = "data" () {name:"x", shape:[2], dtype:f32} : () -> tensor<2xf32>
  (%1) = "data" () {name:"y", shape:[3], dtype:f32} : () -> tensor<3xf32>
  (%2) = "add" (%0, %1) : (tensor<2xf32>, tensor<3xf32>) -> tensor<2xf32>
}
