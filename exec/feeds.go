package exec

import (
	"fmt"
	"sort"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/tensor"
)

// FeedError says that a feed is missing, unknown, or of the wrong type.
type FeedError struct {
	Name string
	Want string // the type the program's data op declares, or "" if unknown
	Got  string // the fed tensor's type, or "" if missing
	Msg  string
}

func (e *FeedError) Error() string {
	switch {
	case e.Want == "":
		return fmt.Sprintf("feed %q is not an input of the program (%s)", e.Name, e.Msg)
	case e.Got == "":
		return fmt.Sprintf("feed %q is missing: the program expects %s", e.Name, e.Want)
	}
	return fmt.Sprintf("feed %q: %s; the program expects %s, got %s", e.Name, e.Msg, e.Want, e.Got)
}

// Feeds lists the program's inputs: name and declared type, in program
// order.
func (e *Executable) Feeds() []FeedSpec {
	out := make([]FeedSpec, len(e.feeds))
	for i, f := range e.feeds {
		out[i] = FeedSpec{Name: f.name, Type: f.typ}
	}
	return out
}

// Params lists the parameters the program reads: name and type, in program
// order, each once.
func (e *Executable) Params() []FeedSpec {
	var out []FeedSpec
	seen := map[string]bool{}
	for _, p := range e.params {
		if !seen[p.name] {
			seen[p.name] = true
			out = append(out, FeedSpec{Name: p.name, Type: p.typ})
		}
	}
	return out
}

// FeedSpec describes one input of a program.
type FeedSpec struct {
	Name string
	Type ir.Type
}

func (e *Executable) checkFeeds(feeds map[string]*tensor.Tensor) error {
	for _, f := range e.feeds {
		t, ok := feeds[f.name]
		if !ok || t == nil {
			return &FeedError{Name: f.name, Want: f.typ.String()}
		}
		if !fits(t, &f.typ) {
			msg := "shape does not match"
			switch {
			case ir.DType(t.DType()) != f.typ.DType:
				msg = "dtype does not match"
			case t.Rank() != f.typ.Rank():
				msg = "rank does not match"
			}
			return &FeedError{Name: f.name, Want: f.typ.String(), Got: describeTensor(t), Msg: msg}
		}
	}
	if len(feeds) > len(e.feeds) || hasUnknown(e.feeds, feeds) {
		var unknown []string
		for name := range feeds {
			if !declared(e.feeds, name) {
				unknown = append(unknown, name)
			}
		}
		sort.Strings(unknown)
		inputs := make([]string, len(e.feeds))
		for i, f := range e.feeds {
			inputs[i] = f.name
		}
		return &FeedError{Name: unknown[0], Msg: fmt.Sprintf("inputs are %v", inputs)}
	}
	return nil
}

func declared(fs []feed, name string) bool {
	for _, f := range fs {
		if f.name == name {
			return true
		}
	}
	return false
}

func hasUnknown(fs []feed, feeds map[string]*tensor.Tensor) bool {
	for name := range feeds {
		if !declared(fs, name) {
			return true
		}
	}
	return false
}

func (e *Executable) checkParams() error {
	for _, p := range e.params {
		t, ok := e.store.Get(p.name)
		if !ok {
			return &MissingParameterError{Name: p.name, Want: p.typ.String()}
		}
		if !fits(t, &p.typ) {
			return &MissingParameterError{Name: p.name, Want: p.typ.String(), Got: describeTensor(t)}
		}
	}
	return nil
}
