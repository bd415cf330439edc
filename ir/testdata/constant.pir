// Constants of every dtype, with the float spellings that must survive a
// round trip: shortest digits for f32 and f64, the infinities, NaN and -0.
{
  (%a) = "constant" () {value:tensor<2x3xf32>[1.0, -2.5, 3.14159, inf, -inf, nan]} : () -> tensor<2x3xf32>
  (%b) = "constant" () {value:tensor<4xf64>[0.1, -0.0, 5e-324, 1.7976931348623157e+308]} : () -> tensor<4xf64>
  (%c) = "constant" () {value:tensor<3xi64>[9223372036854775807, -9223372036854775808, 0]} : () -> tensor<3xi64>
  (%d) = "constant" () {value:tensor<2xi32>[2147483647, -2147483648]} : () -> tensor<2xi32>
  (%e) = "constant" () {value:tensor<2x1xi1>[true, false]} : () -> tensor<2x1xi1>
  (%f) = "constant" () {value:tensor<0x2xf32>[]} : () -> tensor<0x2xf32>
  (%g) = "constant" () {value:tensor<f32>[16777217]} : () -> tensor<f32>
  () = "fetch" (%a) {name:"a"} : (tensor<2x3xf32>) -> ()
  () = "fetch" (%b) {name:"b"} : (tensor<4xf64>) -> ()
  () = "fetch" (%c) {name:"c"} : (tensor<3xi64>) -> ()
  () = "fetch" (%d) {name:"d"} : (tensor<2xi32>) -> ()
  () = "fetch" (%e) {name:"e"} : (tensor<2x1xi1>) -> ()
  () = "fetch" (%f) {name:"f"} : (tensor<0x2xf32>) -> ()
  () = "fetch" (%g) {name:"g"} : (tensor<f32>) -> ()
}
