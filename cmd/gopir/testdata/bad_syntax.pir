{
  (%0) = "data" () {name:"x", shape:[2], dtype:f32} : () -> tensor<2xf32>
  (%1) = "relu" (%0 : (tensor<2xf32>) -> tensor<2xf32>
}
