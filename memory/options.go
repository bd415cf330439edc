package memory

import "fmt"

// Defaults for zero-valued Options fields.
const (
	DefaultChunkSize = 32 << 20
	DefaultAlignment = 64
	DefaultDevice    = "CPU 0"
)

// Options configures an Allocator. The zero value is valid: 32 MiB chunks,
// no limit, 64-byte alignment, device "CPU 0", history off.
type Options struct {
	// ChunkSize is the number of bytes reserved per auto-growth chunk
	// (rounded up to Alignment). A request larger than ChunkSize gets a
	// chunk of its own, of exactly its rounded size. Under a Limit a chunk
	// shrinks to what the limit still allows, as long as the request fits.
	ChunkSize int64
	// Limit is the capacity in bytes: Reserved.Current never exceeds it.
	// 0 means unlimited.
	Limit int64
	// Alignment of every block start and every block size; a power of two
	// >= 64. 0 means 64.
	Alignment int64
	// Device names the allocator in the OOM message, e.g. "CPU 0".
	Device string
	// HistoryCap > 0 keeps the last HistoryCap alloc/free events.
	HistoryCap int
}

// normalize fills defaults and panics on options that can only be a
// programming mistake: New has no error result, and silently fixing them
// would make the accounting lie.
func (o Options) normalize() Options {
	if o.Alignment == 0 {
		o.Alignment = DefaultAlignment
	}
	if o.Alignment < 64 || o.Alignment&(o.Alignment-1) != 0 {
		panic(fmt.Sprintf("memory: Options.Alignment must be a power of two >= 64, got %d", o.Alignment))
	}
	if o.ChunkSize < 0 || o.Limit < 0 || o.HistoryCap < 0 {
		panic(fmt.Sprintf("memory: negative option (ChunkSize %d, Limit %d, HistoryCap %d)", o.ChunkSize, o.Limit, o.HistoryCap))
	}
	if o.ChunkSize == 0 {
		o.ChunkSize = DefaultChunkSize
	}
	o.ChunkSize = (o.ChunkSize + o.Alignment - 1) &^ (o.Alignment - 1)
	if o.Device == "" {
		o.Device = DefaultDevice
	}
	return o
}
