package exec

import (
	"fmt"
	"sort"

	"github.com/gopir/gopir/tensor"
)

// Store holds persistable tensors: parameters and optimizer state. It owns
// one reference to each; runs read them through "parameter" ops without
// taking ownership.
type Store struct {
	vals map[string]*tensor.Tensor
}

// NewStore returns an empty store.
func NewStore() *Store { return &Store{vals: map[string]*tensor.Tensor{}} }

// Set stores t under name, taking over the caller's reference, and releases
// the tensor it replaces. Storing the tensor already stored there releases
// the store's own reference instead, so the store never holds two.
func (s *Store) Set(name string, t *tensor.Tensor) {
	if old, ok := s.vals[name]; ok {
		old.Release()
	}
	s.vals[name] = t
}

// Get returns the tensor stored under name (not retained). Code that
// writes its elements in place calls t.Storage().Touch() afterwards, so
// that executables holding a packed copy of it (Options.PackCache) pack
// it again.
func (s *Store) Get(name string) (*tensor.Tensor, bool) {
	t, ok := s.vals[name]
	return t, ok
}

// Names lists the stored names, sorted.
func (s *Store) Names() []string {
	names := make([]string, 0, len(s.vals))
	for n := range s.vals {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Bytes is the total size of the stored tensors.
func (s *Store) Bytes() int64 {
	var n int64
	for _, t := range s.vals {
		n += t.Bytes()
	}
	return n
}

// Delete releases and removes name.
func (s *Store) Delete(name string) {
	if t, ok := s.vals[name]; ok {
		t.Release()
		delete(s.vals, name)
	}
}

// Release releases every stored tensor and empties the store.
func (s *Store) Release() {
	for n, t := range s.vals {
		t.Release()
		delete(s.vals, n)
	}
}

// MissingParameterError says that a program reads a parameter the store
// does not hold, or holds with another type.
type MissingParameterError struct {
	Name string
	Want string // the type the program expects
	Got  string // what the store holds, or "" if nothing
}

func (e *MissingParameterError) Error() string {
	if e.Got == "" {
		return fmt.Sprintf("parameter %q (%s) is not in the store", e.Name, e.Want)
	}
	return fmt.Sprintf("parameter %q: program expects %s, store holds %s", e.Name, e.Want, e.Got)
}
