// Attribute values of every kind; relu ignores attributes it does not know.
{
  (%x) = "data" () {name:"x", shape:[4], dtype:f32} : () -> tensor<4xf32>
  (%0) = "relu" (%x) {eps:1e-05, lo:-inf, hi:inf, undefined:nan, big:1e+300, tiny:5e-324, neg:-2.5, negzero:-0.0, whole:3.0, exp:2E3, trail:1., half:-.5} : (tensor<4xf32>) -> tensor<4xf32>
  (%1) = "relu" (%0) {min:-9223372036854775808, max:9223372036854775807, plus:+7, zero:-0} : (tensor<4xf32>) -> tensor<4xf32>
  (%2) = "relu" (%1) {kernel:[[1,2],[3,4]], none:[], deep:[[[]]], mixed:[1, 2.5, "s", true, f64, [i1, -inf]]} : (tensor<4xf32>) -> tensor<4xf32>
  (%3) = "relu" (%2) {text:"tab\there \"quoted\" back\\slash \u00e9 newline\n", utf8:"héllo, 世界", ctrl:"\x00\a\x7f", none:""} : (tensor<4xf32>) -> tensor<4xf32>
  (%4) = "relu" (%3) {on:true, off:false, dt:i32, true:false, f32:i64, _under_score9:1} : (tensor<4xf32>) -> tensor<4xf32>
  () = "fetch" (%4) {name:"out"} : (tensor<4xf32>) -> ()
}
