package models

// RNNDynamicBatchForTest returns the rnn task with a dynamic batch dim in
// its training program (StaticBatch off), which keeps each length bucket's
// last, shorter batch: both T and B then change from step to step.
func RNNDynamicBatchForTest() Task {
	cfg := rnnDefaultConfig()
	cfg.StaticBatch = false
	return newRNN(cfg)
}
