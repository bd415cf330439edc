package ir

// "if" runs one of its two regions, "then" when its operand (an i1
// scalar) is true and "else" otherwise; the values the region yields are
// its results. The regions have no block arguments and read the values of
// enclosing blocks directly (implicit capture). Build it with Builder.If.
//
//	(%r) = "if" (%cond) : (tensor<i1>) -> tensor<4xf32> {
//	  () = "yield" (%a) : (tensor<4xf32>) -> ()
//	} else {
//	  () = "yield" (%b) : (tensor<4xf32>) -> ()
//	}

func init() {
	registerBuiltin("if", OpSpec{Regions: 2, BuiltBy: "If", Keyword: "else", Verify: verifyIf})
}

func verifyIf(op *Op) error {
	var errs opErrors
	if len(op.operands) != 1 || len(op.regions) != 2 {
		errs.add(op, "if takes 1 operand and 2 regions, has %d and %d", len(op.operands), len(op.regions))
		return errs.err()
	}
	if t, ok := operandType(op, 0); ok && !isBoolScalar(t) {
		errs.add(op, "condition must be tensor<i1>, is %s", t)
	}
	for ri, r := range op.regions {
		branch := [2]string{"then", "else"}[ri]
		if len(r.block.args) != 0 {
			errs.add(op, "%s branch must not have block arguments", branch)
		}
		y := r.block.Terminator()
		if y == nil {
			continue // reported with the block
		}
		if len(y.operands) != len(op.results) {
			errs.add(y, "%s branch yields %d values, if has %d results", branch, len(y.operands), len(op.results))
			continue
		}
		for i := range y.operands {
			if t, ok := operandType(y, i); ok && !t.Refines(op.results[i].typ) {
				errs.add(y, "%s branch yields %s for result %d of type %s", branch, t, i, op.results[i].typ)
			}
		}
	}
	return errs.err()
}
