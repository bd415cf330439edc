// Scalars, dynamic and zero dims, named values, comments, an explicit empty
// attribute dictionary and a while with no loop-carried values.
{
  (%images) = "data" () {name:"images", shape:[-1,-1,28,28], dtype:f32} : () -> tensor<?x?x28x28xf32>
  (%scale) = "parameter" () {name:"scale", shape:[], dtype:f32} : () -> tensor<f32> // a scalar
  (%scale.again) = "parameter" () {name:"scale", shape:[], dtype:f32} : () -> tensor<f32>
  (%flag) = "data" () {name:"flag", shape:[], dtype:i1} : () -> tensor<i1>
  (%empty) = "data" () {name:"empty", shape:[0,3], dtype:f64} : () -> tensor<0x3xf64>
  (%r) = "relu" (%images) {} : (tensor<?x?x28x28xf32>) -> tensor<?x?x28x28xf32>
  (%s) = "reduce_sum" (%r) {axes:[0,-1], keepdim:true} : (tensor<?x?x28x28xf32>) -> (tensor<1x?x28x1xf32>)
  (%t) = "reduce_sum" (%r) {axes:[0,1,2,3], keepdim:false} : (tensor<?x?x28x28xf32>) -> tensor<f32>
  (%u) = "multiply" (%t, %scale) : (tensor<f32>, tensor<f32>) -> tensor<f32>
  (%v$1) = "multiply" (%u, %scale.again) : (tensor<f32>, tensor<f32>) -> tensor<f32>
  (%w) = "cast" (%v$1) {dtype:i32} : (tensor<f32>) -> tensor<i32>
  (%no) = "full" () {shape:[], value:0, dtype:i1} : () -> tensor<i1>
  // No loop-carried values: the body only computes the next condition.
  () = "while" (%flag) : (tensor<i1>) -> () {
  ^():
    () = "assert_scalar" (%w) : (tensor<i32>) -> ()
    () = "yield" (%no) : (tensor<i1>) -> ()
  }
  ()="fetch"(%v$1){name:"v"}:(tensor<f32>)->()
  () = "fetch" (%s) {name:"s"} : (tensor<1x?x28x1xf32>) -> ()
  () = "fetch" (%empty) {name:"empty"} : (tensor<0x3xf64>) -> ()
}
// A comment after the program.
