// The if example of docs/ir.md: relu of x if its sum is positive, else -x.
{
  (%0) = "data" () {name:"x", shape:[-1,4], dtype:f32} : () -> tensor<?x4xf32>
  (%1) = "full" () {shape:[], value:0.0, dtype:f32} : () -> tensor<f32>
  (%2) = "reduce_sum" (%0) {axes:[0,1], keepdim:false} : (tensor<?x4xf32>) -> tensor<f32>
  (%3) = "greater_than" (%2, %1) : (tensor<f32>, tensor<f32>) -> tensor<i1>
  (%4) = "if" (%3) : (tensor<i1>) -> tensor<?x4xf32> {
    (%5) = "relu" (%0) : (tensor<?x4xf32>) -> tensor<?x4xf32>
    () = "yield" (%5) : (tensor<?x4xf32>) -> ()
  } else {
    () = "yield" (%0) : (tensor<?x4xf32>) -> ()
  }
  () = "fetch" (%4) {name:"out"} : (tensor<?x4xf32>) -> ()
}
