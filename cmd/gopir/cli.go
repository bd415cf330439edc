package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/memory"
)

// Exit codes.
const (
	exitOK       = 0
	exitFailure  = 1 // the program ran and failed: out of memory, a leak, a kernel error
	exitBadInput = 2 // flags, files, feeds or programs that cannot be used
)

// usageError marks errors caused by what the user gave us.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func badInput(err error) error { return usageError{err} }

func badInputf(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// Main runs the command line args and returns the exit code. It never
// panics on bad input; a panic would be a bug and is reported as such.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "gopir: internal error (please report): %v\n", r)
			code = exitFailure
		}
	}()
	root := newRoot(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var se silentExit
	if errors.As(err, &se) {
		return se.code // reported already
	}
	return report(err, "", stderr)
}

// report prints err on stderr, in one line (with prefix, if any, in front)
// or, for a kernel panic, with its stack, and returns the exit code. Out
// of memory, the allocator's message comes as is, then where it happened:
// on a line of its own, or with a prefix (a rank of a data-parallel job,
// whose lines mix with the others') on the same line.
func report(err error, prefix string, stderr io.Writer) int {
	var oom *memory.ResourceExhausted
	if errors.As(err, &oom) {
		var opErr *exec.OpError
		switch {
		case !errors.As(err, &opErr):
			fmt.Fprintln(stderr, prefix+oom.Error())
		case prefix != "":
			fmt.Fprintf(stderr, "%s%s in op %q at %s\n", prefix, oom.Error(), opErr.Op, opErr.Pos)
		default:
			fmt.Fprintln(stderr, oom.Error())
			fmt.Fprintf(stderr, "\tin op %q at %s\n", opErr.Op, opErr.Pos)
		}
		return exitFailure
	}
	fmt.Fprintln(stderr, prefix+oneLine(err))
	var kp *exec.KernelPanicError
	if errors.As(err, &kp) {
		// A bug in gopir: the stack is what a report needs.
		fmt.Fprintf(stderr, "%s\n", strings.TrimRight(kp.Stack, "\n"))
		return exitFailure
	}
	var ue usageError
	var ee exitError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		return exitBadInput
	case isFlagError(err):
		return exitBadInput
	}
	return exitFailure
}

// silentExit ends the program with code after the error was reported.
type silentExit struct{ code int }

func (e silentExit) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// isFlagError recognizes cobra's own argument and flag errors, which carry
// no type of their own.
func isFlagError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "invalid argument", "flag needs an argument", "accepts ", "requires ", "required flag", "bad flag syntax", "if any flags in the group"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// oneLine keeps the first line of an error message.
func oneLine(err error) string {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return msg
}

func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "gopir",
		Short:         "Build, differentiate, train and run deep-learning programs with exact memory",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newPrintCmd(), newRunCmd(), newGradCmd(), newImportCmd(), newTrainCmd(), newMemcheckCmd(), newPlanCmd(), newFeedsCmd())
	return root
}
