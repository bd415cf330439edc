#!/usr/bin/env bash
# bench/gemm.sh: gopir's f32 GEMM next to OpenBLAS (through numpy), measured
# in one run on this machine, as GFLOP/s and a ratio per size.
#
#   bash bench/gemm.sh [BENCHTIME]      (default 2s per size)
#
# bench/run makes the same comparison side by side with the rest of issue
# 8's benchmarks (with 1 and 2 threads, over several rounds).
#
# The OpenBLAS column needs Debian's python3-numpy with OpenBLAS behind it:
#   apt-get install python3-numpy libopenblas0-pthread
# (numpy alone links the slow reference BLAS; the script says so). Without
# numpy, only gopir's numbers are printed.
set -euo pipefail
cd "$(dirname "$0")/.."
benchtime=${1:-2s}
threads=$(nproc)

ours=$(go test -run '^$' -bench 'Gemm/n=(128|256|512|1024)$' -benchtime "$benchtime" ./kernels/ |
	awk '/^BenchmarkGemm\/n=/ { split($1, a, "="); sub(/-[0-9]+$/, "", a[2]); for (i = 1; i <= NF; i++) if ($(i+1) == "GFLOP/s") print a[2], $i }')

theirs=""
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
	# OpenBLAS picks its kernels from the CPU; the overrides some images set
	# would skew it, so they are unset for this command only.
	theirs=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS="$threads" /usr/bin/python3 - <<'PY'
import time, numpy as np
for n in (128, 256, 512, 1024):
    a = np.random.rand(n, n).astype(np.float32)
    b = np.random.rand(n, n).astype(np.float32)
    c = np.empty((n, n), dtype=np.float32)
    np.matmul(a, b, out=c)
    reps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < 1.0:
        np.matmul(a, b, out=c)  # into the same C, as gopir's benchmark does
        reps += 1
    dt = (time.perf_counter() - t0) / reps
    print(n, 2 * n**3 / dt / 1e9)
PY
)
	blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)
	case "$blas" in
	*openblas*) ;;
	*) echo "warning: numpy does not seem to use OpenBLAS ($blas); apt-get install libopenblas0-pthread" >&2 ;;
	esac
else
	echo "python3-numpy is not installed: printing gopir's numbers only (apt-get install python3-numpy)" >&2
fi

printf '%-6s %14s %18s %8s\n' n "gopir GFLOP/s" "OpenBLAS GFLOP/s" ratio
while read -r n g; do
	o=$(awk -v n="$n" '$1 == n { print $2 }' <<<"$theirs")
	if [ -n "$o" ]; then
		printf '%-6s %14.1f %18.1f %8.2f\n' "$n" "$g" "$o" "$(awk -v g="$g" -v o="$o" 'BEGIN { print g / o }')"
	else
		printf '%-6s %14.1f %18s %8s\n' "$n" "$g" "-" "-"
	fi
done <<<"$ours"
