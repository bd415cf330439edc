package models

// EvalBatcher is implemented by tasks whose evaluation batch can shrink
// without changing their metrics: every output of the evaluation program
// is computed per sample (batch norm reads its running statistics), and
// the metric is taken over the whole test set. A trainer with a memory
// limit picks the largest batch, up to EvalBatch, whose evaluation fits.
// The gate task does not shrink: its `if` takes a branch per batch, so
// its accuracy depends on the batch.
type EvalBatcher interface {
	// EvalBatch is the batch Evaluate runs now (the task's default until
	// SetEvalBatch).
	EvalBatch() int
	// SetEvalBatch makes Evaluate run batches of n ≥ 1 test samples.
	SetEvalBatch(n int)
}
