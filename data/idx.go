package data

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// IDX is an array read from an IDX file, the format of the MNIST
// distribution: a big-endian header (two zero bytes, an element-type byte,
// a rank byte, then one uint32 per dimension) followed by the elements in
// row-major order. Only unsigned-byte elements (type 0x08) are supported,
// which is what MNIST uses.
type IDX struct {
	Dims []int
	Data []uint8 // len(Data) is the product of Dims
}

// MaxIDXBytes bounds the data size a header may announce, so that a corrupt
// header cannot make ReadIDX try to hold more than this in memory.
const MaxIDXBytes = 1 << 31

// idxUByte is the IDX element-type code for unsigned bytes.
const idxUByte = 0x08

// ReadIDX reads one IDX array from r, which may be gzip-compressed (it is
// recognised by its magic bytes). It checks the magic number, the element
// type, the rank, the announced size, that the data is complete and that
// nothing follows it; every problem is an error starting with "idx:",
// never a panic. Memory grows with the bytes actually read, not with what a
// header announces.
func ReadIDX(r io.Reader) (*IDX, error) {
	br := bufio.NewReader(r)
	head, err := br.Peek(2)
	if err != nil {
		return nil, headerErr("magic number", len(head), 4, err)
	}
	var src io.Reader = br
	if head[0] == 0x1f && head[1] == 0x8b {
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("idx: bad gzip stream: %v", err)
		}
		defer z.Close()
		src = z
	}
	return readIDX(src)
}

func readIDX(r io.Reader) (*IDX, error) {
	var magic [4]byte
	if n, err := io.ReadFull(r, magic[:]); err != nil {
		return nil, headerErr("magic number", n, 4, err)
	}
	if magic[0] != 0 || magic[1] != 0 {
		return nil, fmt.Errorf("idx: bad magic number 0x%02x%02x%02x%02x (an IDX file starts with two zero bytes)", magic[0], magic[1], magic[2], magic[3])
	}
	if magic[2] != idxUByte {
		return nil, fmt.Errorf("idx: unsupported element type 0x%02x (only 0x08, unsigned byte, is supported)", magic[2])
	}
	rank := int(magic[3])
	if rank == 0 {
		return nil, errors.New("idx: rank 0 in magic number (need at least one dimension)")
	}
	hdr := make([]byte, 4*rank)
	if n, err := io.ReadFull(r, hdr); err != nil {
		return nil, headerErr(fmt.Sprintf("%d dimensions", rank), n, len(hdr), err)
	}
	dims := make([]int, rank)
	total := int64(1)
	for i := range dims {
		d := int64(binary.BigEndian.Uint32(hdr[4*i:]))
		dims[i] = int(d)
		if d != 0 && total > MaxIDXBytes/d {
			return nil, fmt.Errorf("idx: dimensions %v announce more than %d bytes", dims[:i+1], int64(MaxIDXBytes))
		}
		total *= d
	}
	data, err := readN(r, int(total))
	if err != nil {
		return nil, fmt.Errorf("idx: data of %v: %v", dims, err)
	}
	var extra [1]byte
	switch n, err := io.ReadFull(r, extra[:]); {
	case n > 0:
		return nil, fmt.Errorf("idx: unexpected bytes after the %d data bytes of %v", total, dims)
	case err != io.EOF:
		return nil, fmt.Errorf("idx: after the data of %v: %v", dims, err)
	}
	return &IDX{Dims: dims, Data: data}, nil
}

func headerErr(what string, got, want int, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("idx: truncated header: %s needs %d bytes, found %d", what, want, got)
	}
	return fmt.Errorf("idx: reading %s: %v", what, err)
}

// readN reads exactly n bytes, growing the buffer as data arrives.
func readN(r io.Reader, n int) ([]byte, error) {
	const step = 1 << 20
	buf := make([]byte, 0, min(n, step))
	for len(buf) < n {
		k := min(n-len(buf), max(len(buf), step))
		buf = slices.Grow(buf, k)
		got, err := io.ReadFull(r, buf[len(buf):len(buf)+k])
		buf = buf[:len(buf)+got]
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("truncated: header announces %d bytes, file has %d", n, len(buf))
			}
			return nil, err
		}
	}
	return buf, nil
}
