package ir

import (
	"runtime"
	"strings"
	"sync"
)

// helperPrefixes are function-name prefixes that callerPos skips, so that an
// op built through a helper package records the helper's caller.
var helperPrefixes = struct {
	sync.RWMutex
	list []string
}{list: []string{"github.com/gopir/gopir/ir."}}

// MarkHelperPackage makes builders skip stack frames of the package with
// the given import path when recording where an op was built, the way
// testing.T.Helper does for test helpers. Packages that wrap Builder (ops,
// nn, models) call it from init.
func MarkHelperPackage(importPath string) {
	helperPrefixes.Lock()
	defer helperPrefixes.Unlock()
	helperPrefixes.list = append(helperPrefixes.list, importPath+".")
}

func isHelper(fn string) bool {
	helperPrefixes.RLock()
	defer helperPrefixes.RUnlock()
	for _, p := range helperPrefixes.list {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

// callerPos returns the position of the first caller outside the helper
// packages.
func callerPos() Pos {
	var pcs [32]uintptr
	n := runtime.Callers(2, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if !isHelper(f.Function) {
			return Pos{File: f.File, Line: f.Line}
		}
		if !more {
			return Pos{}
		}
	}
}
