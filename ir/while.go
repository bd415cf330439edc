package ir

// "while" runs its region as long as the condition holds: its first
// operand (an i1 scalar) is the initial condition, the others the initial
// loop-carried values, which become the region's block arguments. The
// region yields the next condition and the next values; the last values
// are the results. Build it with Builder.While or Builder.WhileTyped.
//
//	(%n) = "while" (%c, %i) : (tensor<i1>, tensor<i64>) -> tensor<i64> {
//	^(%j: tensor<i64>):
//	  ...
//	  () = "yield" (%more, %next) : (tensor<i1>, tensor<i64>) -> ()
//	}

func init() {
	registerBuiltin("while", OpSpec{Regions: 1, BuiltBy: "While", Verify: verifyWhile})
}

func verifyWhile(op *Op) error {
	var errs opErrors
	if len(op.operands) < 1 || len(op.regions) != 1 {
		errs.add(op, "while takes a condition operand and 1 region, has %d operands and %d regions", len(op.operands), len(op.regions))
		return errs.err()
	}
	if t, ok := operandType(op, 0); ok && !isBoolScalar(t) {
		errs.add(op, "condition must be tensor<i1>, is %s", t)
	}
	body := op.regions[0].block
	n := len(op.operands) - 1
	if len(body.args) != n || len(op.results) != n {
		errs.add(op, "while has %d loop-carried operands, %d block arguments and %d results; they must agree", n, len(body.args), len(op.results))
		return errs.err()
	}
	for i, a := range body.args {
		if !a.typ.IsValid() {
			errs.add(op, "block argument %d has an invalid type %s", i, a.typ)
		}
		if t, ok := operandType(op, i+1); ok && !t.Refines(a.typ) {
			errs.add(op, "loop-carried operand %d has type %s, block argument is %s", i, t, a.typ)
		}
		if !op.results[i].typ.Equal(a.typ) {
			errs.add(op, "result %d has type %s, block argument is %s", i, op.results[i].typ, a.typ)
		}
	}
	y := body.Terminator()
	if y == nil {
		return errs.err()
	}
	if len(y.operands) != n+1 {
		errs.add(y, "while body yields %d values, want the condition and %d loop-carried values", len(y.operands), n)
		return errs.err()
	}
	if t, ok := operandType(y, 0); ok && !isBoolScalar(t) {
		errs.add(y, "while body yields condition of type %s, want tensor<i1>", t)
	}
	for i, a := range body.args {
		if t, ok := operandType(y, i+1); ok && !t.Refines(a.typ) {
			errs.add(y, "while body yields %s for loop-carried value %d of type %s", t, i, a.typ)
		}
	}
	return errs.err()
}
