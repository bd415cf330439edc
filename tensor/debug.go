package tensor

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
)

var debugOn atomic.Bool

// SetDebug turns debug mode on or off for all tensors: released bytes are
// poisoned, and use after release or double release panics naming where the
// storage was released. Off by default.
func SetDebug(on bool) { debugOn.Store(on) }

// Debug reports whether debug mode is on.
func Debug() bool { return debugOn.Load() }

// poison is the byte released memory is filled with: as f32 or f64 it reads
// as NaN, as an integer as -1, so stale reads stand out.
const poison = 0xFF

// callSite returns a short stack, "file:line (func)" for up to three frames
// starting skip frames above its caller; cheap enough for debug mode only.
func callSite(skip int) string {
	var pcs [3]uintptr
	n := runtime.Callers(skip+2, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	var parts []string
	for {
		f, more := frames.Next()
		if f.File != "" {
			fn := f.Function
			if i := strings.LastIndexByte(fn, '/'); i >= 0 {
				fn = fn[i+1:]
			}
			parts = append(parts, fmt.Sprintf("%s:%d (%s)", filepath.Base(f.File), f.Line, fn))
		}
		if !more {
			break
		}
	}
	if len(parts) == 0 {
		return "unknown"
	}
	return strings.Join(parts, " <- ")
}
