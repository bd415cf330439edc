package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// parseSize reads a byte count such as 512MiB, 1.5GB, 4096 or 64k. Units
// are powers of 1024 whether or not they carry an "i", as in the memory
// reports (MB = 2^20 bytes).
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	num := strings.TrimRightFunc(t, func(r rune) bool { return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' })
	unit := strings.ToLower(t[len(num):])
	mult := map[string]float64{
		"": 1, "b": 1,
		"k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
		"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
		"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
		"t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
	}[unit]
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || mult == 0 || !(v >= 0 && v*mult <= 1<<62) { // NaN fails too
		return 0, fmt.Errorf("invalid size %q: want a number of bytes with an optional unit, like 512MiB or 2GB", s)
	}
	return int64(v * mult), nil
}

// memLimit is the allocator capacity for --mem-limit flag: the machine's
// physical memory when the flag is empty, otherwise the size it gives,
// which must be at least one byte, capped at physical memory. A limit is
// never "off": above physical memory the Go runtime itself would die of
// out-of-memory instead of the allocator reporting it.
func memLimit(flag string) (int64, error) {
	phys := defaultMemLimit()
	if flag == "" {
		return phys, nil
	}
	n, err := parseSize(flag)
	if err != nil {
		return 0, badInputf("--mem-limit: %v", err)
	}
	if n < 1 {
		return 0, badInputf("--mem-limit %s: a limit is a positive size, like 512MiB", flag)
	}
	if phys > 0 && n > phys {
		n = phys
	}
	return n, nil
}

// defaultMemLimit is the allocator capacity when --mem-limit is not given:
// the machine's physical memory, so that an impossible request is a clear
// ResourceExhaustedError instead of the Go runtime dying. 0 (no limit)
// where the size cannot be read.
func defaultMemLimit() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}
