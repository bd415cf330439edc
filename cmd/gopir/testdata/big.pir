// Holds two 4 MiB buffers at once: too much for --mem-limit 6MiB.
{
  (%a) = "full" () {shape:[1024,1024], value:1.0, dtype:f32} : () -> tensor<1024x1024xf32>
  (%b) = "exp" (%a) : (tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  (%c) = "add" (%a, %b) : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  (%s) = "reduce_sum" (%c) {axes:[], keepdim:false} : (tensor<1024x1024xf32>) -> tensor<f32>
  () = "fetch" (%s) {name:"s"} : (tensor<f32>) -> ()
}
