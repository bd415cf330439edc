// Control flow nested three deep: an if inside a while inside an if, with
// values captured from every enclosing level.
{
  (%x) = "data" () {name:"x", shape:[2,3], dtype:f32} : () -> tensor<2x3xf32>
  (%n) = "data" () {name:"n", shape:[], dtype:i64} : () -> tensor<i64>
  (%zero) = "full" () {shape:[], value:0, dtype:i64} : () -> tensor<i64>
  (%p) = "greater_than" (%n, %zero) : (tensor<i64>, tensor<i64>) -> tensor<i1>
  // Level 1: an if.
  (%r, %same) = "if" (%p) : (tensor<i1>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
    (%c0) = "less_than" (%zero, %n) : (tensor<i64>, tensor<i64>) -> tensor<i1>
    // Level 2: a while; %keep is yielded unchanged by the body.
    (%iN, %accN, %keepN) = "while" (%c0, %zero, %x, %x) : (tensor<i1>, tensor<i64>, tensor<2x3xf32>, tensor<2x3xf32>) -> (tensor<i64>, tensor<2x3xf32>, tensor<2x3xf32>) {
    ^(%i: tensor<i64>, %acc: tensor<2x3xf32>, %keep: tensor<2x3xf32>):
      (%one) = "full" () {shape:[], value:1, dtype:i64} : () -> tensor<i64>
      (%i1) = "add" (%i, %one) : (tensor<i64>, tensor<i64>) -> tensor<i64>
      (%odd) = "greater_than" (%i, %zero) : (tensor<i64>, tensor<i64>) -> tensor<i1>
      // Level 3: an if inside the while inside the if.
      (%acc1) = "if" (%odd) : (tensor<i1>) -> tensor<2x3xf32> {
        (%t) = "add" (%acc, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
        (%u) = "cast" (%n) {dtype:f32} : (tensor<i64>) -> tensor<f32>
        () = "assert_scalar" (%u) : (tensor<f32>) -> ()
        () = "yield" (%t) : (tensor<2x3xf32>) -> ()
      } else {
        () = "yield" (%x) : (tensor<2x3xf32>) -> ()
      }
      (%c1) = "less_than" (%i1, %n) : (tensor<i64>, tensor<i64>) -> tensor<i1>
      () = "yield" (%c1, %i1, %acc1, %keep) : (tensor<i1>, tensor<i64>, tensor<2x3xf32>, tensor<2x3xf32>) -> ()
    }
    () = "yield" (%accN, %keepN) : (tensor<2x3xf32>, tensor<2x3xf32>) -> ()
  } else {
    () = "yield" (%x, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> ()
  }
  // An if that yields the same value twice.
  (%d0, %d1) = "if" (%p) : (tensor<i1>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
    (%e) = "exp" (%r) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    () = "yield" (%e, %e) : (tensor<2x3xf32>, tensor<2x3xf32>) -> ()
  } else {
    () = "yield" (%same, %same) : (tensor<2x3xf32>, tensor<2x3xf32>) -> ()
  }
  // An if with no results.
  () = "if" (%p) : (tensor<i1>) -> () {
    () = "assert_scalar" (%n) : (tensor<i64>) -> ()
    () = "yield" () : () -> ()
  } else {
    () = "yield" () : () -> ()
  }
  (%s) = "add" (%d0, %d1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  () = "fetch" (%s) {name:"out"} : (tensor<2x3xf32>) -> ()
  () = "fetch" (%same) {name:"same"} : (tensor<2x3xf32>) -> ()
}
