// Asks for 149 GiB: more than any machine this runs on, so without
// --mem-limit the default limit (physical memory) must turn it into a
// ResourceExhaustedError rather than let the Go runtime die.
{
  (%a) = "full" () {shape:[200000,200000], value:1.0, dtype:f32} : () -> tensor<200000x200000xf32>
  (%s) = "reduce_sum" (%a) {axes:[], keepdim:false} : (tensor<200000x200000xf32>) -> tensor<f32>
  () = "fetch" (%s) {name:"s"} : (tensor<f32>) -> ()
}
