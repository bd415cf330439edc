package memory_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gopir/gopir/memory"
)

func TestFormatBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0.000000B"},
		{512, "512.000000B"},
		{1023, "1023.000000B"},
		{1024, "1.000000KB"},
		{1536, "1.500000KB"},
		{27 << 20, "27.000000MB"},
		{4259840, "4.062500MB"},
		{1 << 30, "1.000000GB"},
		{11710627430, "10.906372GB"},
		{5 << 40, "5120.000000GB"},
	} {
		if got := memory.FormatBytes(tc.n); got != tc.want {
			t.Errorf("FormatBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestOOMMessageWellKnownForm(t *testing.T) {
	e := &memory.ResourceExhausted{Device: "CPU 0", Requested: 27 << 20, Allocated: 11710627430, Available: 4259840}
	want := "ResourceExhaustedError: Out of memory error on CPU 0. Cannot allocate 27.000000MB memory on CPU 0, 10.906372GB memory has been allocated and available memory is only 4.062500MB."
	if e.Error() != want {
		t.Fatalf("got  %s\nwant %s", e.Error(), want)
	}
}

func TestOOMAtLimit(t *testing.T) {
	a := memory.New(memory.Options{ChunkSize: 256 << 10, Limit: 1 << 20})
	var held []*memory.Block
	for range 3 {
		b, err := a.Alloc(256 << 10)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, b)
	}
	_, err := a.Alloc(512 << 10)
	want := "ResourceExhaustedError: Out of memory error on CPU 0. Cannot allocate 512.000000KB memory on CPU 0, 768.000000KB memory has been allocated and available memory is only 256.000000KB."
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
	var oom *memory.ResourceExhausted
	if !errors.As(fmt.Errorf("step 3: %w", err), &oom) {
		t.Fatal("errors.As does not find *ResourceExhausted")
	}
	if oom.Requested != 512<<10 || oom.Allocated != 768<<10 || oom.Available != 256<<10 || oom.Device != "CPU 0" || oom.Limit != 1<<20 {
		t.Fatalf("fields: %+v", oom)
	}
	st := a.Stats()
	if st.OOMs != 1 || st.Retries != 0 || st.Reserved.Current != 768<<10 {
		t.Fatalf("stats after OOM: %+v", st)
	}

	// Still usable: what fits is served, and after a free the big request
	// fits too.
	b, err := a.Alloc(200 << 10)
	if err != nil {
		t.Fatalf("allocator unusable after OOM: %v", err)
	}
	a.Free(b)
	a.Free(held[1])
	a.Free(held[2])
	big, err := a.Alloc(512 << 10)
	if err != nil {
		t.Fatalf("after freeing 512KB: %v", err)
	}
	a.Free(big)
	a.Free(held[0])
	if st := a.Stats(); st.Allocated.Current != 0 {
		t.Fatalf("allocated %d after freeing all", st.Allocated.Current)
	}
}

func TestOOMFragmentation(t *testing.T) {
	// 4 chunks of 64 KiB fill the limit; freeing every other 32 KiB block
	// leaves 128 KiB available but no 64 KiB range: the message reports
	// the honest sum and the request still fails.
	a := memory.New(memory.Options{ChunkSize: 64 << 10, Limit: 256 << 10, Device: "GPU 1"})
	var bs []*memory.Block
	for range 8 {
		b, err := a.Alloc(32 << 10)
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
	}
	for i := 0; i < 8; i += 2 {
		a.Free(bs[i])
	}
	_, err := a.Alloc(64 << 10)
	want := "ResourceExhaustedError: Out of memory error on GPU 1. Cannot allocate 64.000000KB memory on GPU 1, 128.000000KB memory has been allocated and available memory is only 128.000000KB."
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
}

func TestRetryReleasesIdleChunks(t *testing.T) {
	a := memory.New(memory.Options{ChunkSize: 256 << 10, Limit: 1 << 20})
	var bs []*memory.Block
	for range 4 {
		b, err := a.Alloc(256 << 10)
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
	}
	for _, b := range bs {
		a.Free(b)
	}
	// Four idle 256 KiB chunks fill the limit; 1 MiB fits only after
	// releasing them.
	b, err := a.Alloc(1 << 20)
	if err != nil {
		t.Fatalf("retry did not help: %v", err)
	}
	st := a.Stats()
	if st.Retries != 1 || st.ChunkReleases != 4 || st.ChunkGrows != 5 || st.OOMs != 0 || st.Reserved.Current != 1<<20 {
		t.Fatalf("stats: %+v", st)
	}
	a.Free(b)
}

func TestZeroSizeBlock(t *testing.T) {
	a := memory.New(memory.Options{HistoryCap: 8})
	b, err := a.Alloc(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Bytes()) != 0 || b.Size() != 0 || b.ID() != 0 {
		t.Fatalf("zero block: len %d size %d id %d", len(b.Bytes()), b.Size(), b.ID())
	}
	if st := a.Stats(); st != (memory.Stats{}) || len(a.Live()) != 0 || len(a.History()) != 0 {
		t.Fatalf("zero block was counted: %+v", st)
	}
	a.Free(b)
	if st := a.Stats(); st != (memory.Stats{}) {
		t.Fatalf("zero free was counted: %+v", st)
	}
	if _, err := a.Alloc(-1); err == nil {
		t.Fatal("Alloc(-1) succeeded")
	}
}
