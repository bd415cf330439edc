package memory

import "fmt"

// ResourceExhausted is the error of a request the allocator cannot serve
// within its limit, after releasing idle chunks and retrying.
type ResourceExhausted struct {
	Device    string
	Requested int64 // bytes as requested (before rounding)
	Allocated int64 // bytes held by live blocks (Stats.Allocated.Current)
	Reserved  int64 // bytes held in chunks after releasing idle ones
	Limit     int64 // the capacity; 0 when unlimited
	// Available is Limit - Allocated: the bytes not held by live blocks,
	// i.e. the unreserved headroom plus the free bytes cached in chunks.
	// It is the honest "how much is left" for the device, but it may be
	// split among several free ranges, none of them big enough: then the
	// request failed on fragmentation, not on size. 0 when unlimited (the
	// Go runtime refused the reservation).
	Available int64
}

// Error follows the well-known form, e.g.
//
//	ResourceExhaustedError: Out of memory error on CPU 0. Cannot allocate 27.000000MB memory on CPU 0, 10.906372GB memory has been allocated and available memory is only 4.062500MB.
func (e *ResourceExhausted) Error() string {
	return fmt.Sprintf("ResourceExhaustedError: Out of memory error on %s. Cannot allocate %s memory on %s, %s memory has been allocated and available memory is only %s.",
		e.Device, FormatBytes(e.Requested), e.Device, FormatBytes(e.Allocated), FormatBytes(e.Available))
}

// FormatBytes prints n in the largest of B, KB, MB, GB (powers of 1024) in
// which it is at least 1, with six decimals: 512.000000B, 27.000000MB.
func FormatBytes(n int64) string {
	v := float64(n)
	for _, unit := range []string{"B", "KB", "MB"} {
		if v < 1024 && v > -1024 {
			return fmt.Sprintf("%.6f%s", v, unit)
		}
		v /= 1024
	}
	return fmt.Sprintf("%.6f%s", v, "GB")
}

// oom builds the error for a failed request; called with a.mu held.
func (a *Allocator) oom(requested int64) *ResourceExhausted {
	e := &ResourceExhausted{
		Device:    a.opts.Device,
		Requested: requested,
		Allocated: a.st.Allocated.Current,
		Reserved:  a.st.Reserved.Current,
		Limit:     a.opts.Limit,
	}
	if a.opts.Limit > 0 {
		e.Available = a.opts.Limit - a.st.Allocated.Current
	}
	return e
}
