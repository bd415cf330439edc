// Command gopir builds, prints, runs and trains gopir programs, and imports
// ONNX models.
//
//	gopir print    (--model NAME [--backward [--ranks N [--sync-bn]] [--mem-limit SIZE] | --deploy] [--image-size S] | FILE.pir | MODEL.onnx | DIR) [--optimize [--passes LIST]]
//	gopir run      (FILE.pir | MODEL.onnx | DIR) [--feed NAME=VALUE]... [--params FILE] [--repeat N] [--mem-limit SIZE] [--check-leaks] [--json] [--optimize=false | --passes LIST] [--memory-timeline FILE] [--trace FILE]
//	gopir grad     (FILE.pir | MODEL.onnx | DIR) --loss NAME --wrt A[,B...] [-o DIR]
//	gopir import   MODEL.onnx -o DIR
//	gopir train    [--model NAME] [--steps N | --epochs E] [--mem-limit SIZE] [--dtype f32|f64] [--memory-timeline FILE] [--trace FILE] [--sync-bn] ...
//	gopir memcheck [--model NAME] [--steps N] ...
//	gopir feeds    --model NAME --out DIR [--steps N,M,...] ...
//	gopir plan     (FILE.pir | MODEL.onnx | DIR | --model NAME [--backward [--ranks N [--sync-bn]] [--mem-limit SIZE]] [--image-size S] [--dtype T]) [--feed-shape NAME=DxD...]... [--batch B] [--fit SIZE] [--threads T] [--json]
//	mpirun -np N gopir train ...   (built with -tags mpi: data-parallel training, docs/distributed.md)
//
// Bad input of any kind gets one line on stderr and exit code 2; running
// out of memory exits 1 with the allocator's ResourceExhaustedError. Under
// mpirun a failing rank prints one line naming it and ends the whole job.
package main

import (
	"os"
)

func main() {
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
