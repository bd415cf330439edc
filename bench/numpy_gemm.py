#!/usr/bin/env python3
"""OpenBLAS's side of gopir's GEMM benchmark (bench/run), through numpy.

    /usr/bin/python3 bench/numpy_gemm.py [--seconds 0.5] N...

Prints "numpy N GFLOPS" per size: float32 C = A @ B (into a preallocated C,
as gopir's benchmark does, so no page faults are timed) with A, B of n x n,
2n^3 flops per product, over as many products as fit in about --seconds
after one warm-up product (total flops over total time, as gopir's Go
benchmark computes its GFLOP/s). Run it with OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE unset (bench/run does) so that OpenBLAS picks its own
kernels, and OPENBLAS_NUM_THREADS set to the thread count.
"""
import argparse
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=0.5)
    ap.add_argument("sizes", type=int, nargs="+")
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    for n in a.sizes:
        x = rng.random((n, n), dtype=np.float32)
        y = rng.random((n, n), dtype=np.float32)
        c = np.empty((n, n), dtype=np.float32)
        np.matmul(x, y, out=c)
        reps, t0 = 0, time.perf_counter()
        while reps < 3 or time.perf_counter() - t0 < a.seconds:
            np.matmul(x, y, out=c)  # into the same C, like gopir's benchmark
            reps += 1
        dt = (time.perf_counter() - t0) / reps
        print(f"numpy {n} {2 * n**3 / dt / 1e9:.3f}", flush=True)


if __name__ == "__main__":
    main()
