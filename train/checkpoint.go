package train

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/gopir/gopir/tensor"
)

// checkpointFile is the file a checkpoint directory holds.
const checkpointFile = "checkpoint.safetensors"

// save writes the store (parameters and optimizer state) and the step
// reached to dir, atomically: a temporary file, synced, then renamed over
// the old checkpoint.
func (t *Trainer) save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
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
	tmp, err := os.CreateTemp(dir, ".checkpoint-*.tmp")
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := writeSafetensors(tmp, tensors, meta); err != nil {
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

// restore loads a checkpoint into the store, in place, and continues from
// its step. The model, seed and batch size must match the run's, and every
// stored tensor must be in the file with the same dtype and shape.
func (t *Trainer) restore(dir string) error {
	path := filepath.Join(dir, checkpointFile)
	file, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--resume: %w", err)
	}
	tensors, meta, err := readSafetensors(file)
	if err != nil {
		return fmt.Errorf("--resume: %s: %w", path, err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("--resume: %s: %s", path, fmt.Sprintf(format, args...))
	}
	if meta["format"] != "gopir-checkpoint-1" {
		return bad("not a gopir checkpoint (format %q)", meta["format"])
	}
	for k, want := range map[string]string{"model": t.cfg.Model, "seed": strconv.FormatInt(t.cfg.Seed, 10), "batch": strconv.Itoa(t.cfg.Batch)} {
		if meta[k] != want {
			return bad("saved with %s %s, this run has %s", k, meta[k], want)
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
		if src.dtype != dst.DType() || !slices.Equal(src.shape, dst.Shape()) {
			return bad("tensor %q is %s %v, the model has %s %v", n, src.dtype, src.shape, dst.DType(), dst.Shape())
		}
	}
	for n := range tensors {
		if !slices.Contains(names, n) {
			return bad("has tensor %q, which this model does not", n)
		}
	}
	for _, n := range names {
		dst, _ := t.store.Get(n)
		copy(dst.Raw(), tensors[n].data)
	}
	t.step = step
	return nil
}
