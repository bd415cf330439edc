package ir

import "fmt"

// Reorder puts b's ops in the given order, which must hold each of b's ops
// exactly once, keep the terminator (if any) last, and place every op after
// the ops of b that define a value it uses, directly or in its regions. On
// an error b is left as it was.
//
// Reorder checks only the data flow. Ops with effects (OpSpec.Writes) and
// ops whose relative order matters for another reason must be kept in
// order by the caller.
func (b *Block) Reorder(order []*Op) error {
	if len(order) != len(b.ops) {
		return fmt.Errorf("ir: Reorder: %d ops for a block of %d", len(order), len(b.ops))
	}
	at := make(map[*Op]int, len(order))
	for i, op := range order {
		if op == nil || op.block != b {
			return fmt.Errorf("ir: Reorder: op %d is not an op of the block", i)
		}
		if _, dup := at[op]; dup {
			return fmt.Errorf("ir: Reorder: %q appears twice", op.name)
		}
		at[op] = i
	}
	if t := b.Terminator(); t != nil && order[len(order)-1] != t {
		return fmt.Errorf("ir: Reorder: the terminator must stay last")
	}
	for i, op := range order {
		var err error
		check := func(user *Op) bool {
			for _, v := range user.operands {
				if d := v.Def(); d != nil && d.block == b && at[d] >= i && err == nil {
					err = fmt.Errorf("ir: Reorder: %q would come before %q, which defines its operand %%%d", op.name, d.name, v.ID())
				}
			}
			return err == nil
		}
		if check(op) {
			for _, r := range op.regions {
				walkBlock(r.block, check)
			}
		}
		if err != nil {
			return err
		}
	}
	copy(b.ops, order)
	return nil
}
