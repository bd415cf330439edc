package exec

// An "if" runs the region its condition picks; the values the region
// yields move into the if's results (the region's frame is empty after
// it). Values the branches capture stay in their outer slots.

func init() { regionOps["if"] = regionOp{run: runIf} }

func runIf(e *Executable, b *blockCode, in *instr) error {
	region := in.regions[1]
	cond := in.in[0].get().Bool()[0]
	if cond {
		region = in.regions[0]
	}
	if e.opts.Conditions != nil {
		e.opts.Conditions(in.op, cond)
	}
	vals, err := e.runBlock(region)
	if err != nil {
		return err
	}
	for i, t := range vals {
		b.slots[in.out[i]] = t
		vals[i] = nil
	}
	return nil
}
