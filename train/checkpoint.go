package train

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/gopir/gopir/tensor"
)

// checkpointFile is the file a checkpoint directory holds.
const checkpointFile = "checkpoint.safetensors"

// save writes the store (parameters and optimizer state) and the step
// reached to dir, atomically: a temporary file, synced, then renamed over
// the old checkpoint. Temporary files that a killed save left behind are
// removed first.
func (t *Trainer) save(dir string) error {
	if err := checkSaveDir(dir); err != nil {
		return err
	}
	removeStaleTemps(dir)
	tensors := map[string]*tensor.Tensor{}
	for _, n := range t.store.Names() {
		tensors[n], _ = t.store.Get(n)
	}
	meta := map[string]string{
		"format": "gopir-checkpoint-1",
		"model":  t.cfg.Model,
		"step":   strconv.Itoa(t.step),
		"seed":   strconv.FormatInt(t.cfg.Seed, 10),
		"batch":  strconv.Itoa(t.cfg.Batch),
	}
	// The pid in the name tells a later save whether the writer is gone.
	tmp, err := os.CreateTemp(dir, fmt.Sprintf("%s%d-*%s", tempPrefix, os.Getpid(), tempSuffix))
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tensor.WriteSafetensors(tmp, tensors, meta); err != nil {
		tmp.Close()
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, checkpointFile)); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// saveOrRescue saves to dir; if that fails, it saves to a new directory
// under the system's temporary directory, so that a finished training run
// does not lose its weights, and says where they went.
func (t *Trainer) saveOrRescue(dir string) error {
	err := t.save(dir)
	if err == nil {
		return nil
	}
	rescue, rerr := os.MkdirTemp("", "gopir-checkpoint-")
	if rerr == nil {
		if rerr = t.save(rescue); rerr == nil {
			return fmt.Errorf("%w; the checkpoint was written to %s instead (--resume %[2]s)", err, rescue)
		}
		os.RemoveAll(rescue)
	}
	return fmt.Errorf("%w; writing it to a temporary directory failed too: %v", err, rerr)
}

const (
	tempPrefix = ".checkpoint-"
	tempSuffix = ".tmp"
)

// checkSaveDir makes sure a checkpoint can be written to dir: it is (or
// can be made) a writable directory and its checkpoint file is not a
// directory. New calls it so that a bad --save fails before training.
func checkSaveDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("checkpoint directory: %w", err)
	}
	if st, err := os.Stat(filepath.Join(dir, checkpointFile)); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("checkpoint directory %s: %s exists and is not a regular file", dir, checkpointFile)
	}
	probe, err := os.CreateTemp(dir, tempPrefix+"probe-*"+tempSuffix)
	if err != nil {
		return fmt.Errorf("checkpoint directory: %w", err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// removeStaleTemps deletes the temporary files of saves into dir whose
// process no longer runs (killed mid-save); a concurrent save's file, whose
// process is alive, stays.
func removeStaleTemps(dir string) {
	names, _ := filepath.Glob(filepath.Join(dir, tempPrefix+"*"+tempSuffix))
	for _, path := range names {
		rest := strings.TrimPrefix(filepath.Base(path), tempPrefix)
		pid, err := strconv.Atoi(rest[:max(0, strings.IndexByte(rest, '-'))])
		if err == nil && pid != os.Getpid() && processAlive(pid) {
			continue
		}
		os.Remove(path)
	}
}

// processAlive reports whether a process with this pid exists.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return p.Signal(syscall.Signal(0)) == nil
}

// restore loads a checkpoint into the store, in place, and continues from
// its step. The model, seed and batch size must match the run's, and every
// stored tensor must be in the file with the same dtype and shape.
func (t *Trainer) restore(dir string) error {
	path := filepath.Join(dir, checkpointFile)
	file, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--resume: %w", err)
	}
	tensors, meta, err := tensor.ParseSafetensors(file)
	if err != nil {
		return fmt.Errorf("--resume: %s: %w", path, err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("--resume: %s: %s", path, fmt.Sprintf(format, args...))
	}
	if meta["format"] != "gopir-checkpoint-1" {
		return bad("not a gopir checkpoint (format %q)", meta["format"])
	}
	// In this order: a checkpoint of another model differs in everything,
	// and the model is what to report.
	for _, m := range []struct{ key, want string }{
		{"model", t.cfg.Model},
		{"seed", strconv.FormatInt(t.cfg.Seed, 10)},
		{"batch", strconv.Itoa(t.cfg.Batch)},
	} {
		if meta[m.key] != m.want {
			return bad("saved with %s %s, this run has %s", m.key, meta[m.key], m.want)
		}
	}
	step, err := strconv.Atoi(meta["step"])
	if err != nil || step < 0 {
		return bad("bad step %q", meta["step"])
	}
	names := t.store.Names()
	for _, n := range names {
		dst, _ := t.store.Get(n)
		src, ok := tensors[n]
		if !ok {
			return bad("has no tensor %q", n)
		}
		if src.DType != dst.DType() || !slices.Equal(src.Shape, dst.Shape()) {
			return bad("tensor %q is %s %v, the model has %s %v", n, src.DType, src.Shape, dst.DType(), dst.Shape())
		}
	}
	for n := range tensors {
		if !slices.Contains(names, n) {
			return bad("has tensor %q, which this model does not", n)
		}
	}
	for _, n := range names {
		dst, _ := t.store.Get(n)
		copy(dst.Raw(), tensors[n].Data)
		dst.Storage().Touch() // for whatever was derived from it (exec's pack cache)
	}
	t.step = step
	return nil
}
