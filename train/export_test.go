package train

// SetStep rewinds or advances the trainer to step n, for tests that rerun
// a step from a restored store.
func (t *Trainer) SetStep(n int) { t.step = n }
