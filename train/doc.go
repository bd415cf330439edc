// Package train is gopir's training loop: it builds a task's training
// program (forward, loss, backward, optimizer update) and its evaluation
// program, creates the parameters and optimizer state once in the
// executor's store, runs the steps, logs each with the allocator's
// statistics, evaluates, and saves or resumes checkpoints. With
// Config.Comm it is one rank of a data-parallel job (package dist,
// docs/distributed.md).
//
// The log line is:
//
//	Epoch: [0] [  10/6250] loss: 0.4312 mem_allocated: 825 MB mem_reserved: 3497 MB
//
// and with JSON output each logged step is one object with exact byte
// counts: {"epoch","step","loss","mem_allocated","mem_reserved","peak_allocated"}.
package train
