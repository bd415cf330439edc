package models

import "testing"

// TestMNISTLoadOnce checks that the dataset is read once per directory and
// shared by every task that loads it.
func TestMNISTLoadOnce(t *testing.T) {
	tr1, te1, err := mnistLoad("")
	if err != nil {
		t.Fatal(err)
	}
	tr2, te2, err := mnistLoad("")
	if err != nil {
		t.Fatal(err)
	}
	if tr1 != tr2 || te1 != te2 {
		t.Error("mnistLoad read the files twice")
	}
	if tr1.N != 60000 || te1.N != 10000 {
		t.Errorf("splits of %d and %d images", tr1.N, te1.N)
	}
	var a, b mnistTask
	if err := a.Load(DataConfig{Batch: 32}); err != nil {
		t.Fatal(err)
	}
	if err := b.Load(DataConfig{Batch: 64, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	if a.train != tr1 || b.test != te1 {
		t.Error("tasks do not share the cached splits")
	}
	dir := t.TempDir()
	if _, _, err := mnistLoad(dir); err == nil {
		t.Error("an empty directory loaded")
	}
	if err := a.Load(DataConfig{Batch: 0}); err == nil {
		t.Error("batch 0 accepted")
	}
	if err := a.Load(DataConfig{Batch: 60001}); err == nil {
		t.Error("a batch larger than the training set accepted")
	}
}
