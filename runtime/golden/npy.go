package golden

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxHeaderLen bounds an .npy header (NumPy's own reader refuses more than 10000 bytes by
// default; its writer pads to 64): a longer one is an error, not an allocation.
const maxHeaderLen = 1 << 16

// NPYHeader is what an .npy header declares: the element type as NumPy spells it ("<f4",
// "|b1", ...), the storage order and the shape (empty for a scalar).
type NPYHeader struct {
	Descr   string
	Fortran bool
	Shape   []int
}

// DType names the element type as Array.DType does (float32, float64, bool, int64), or
// "uint8" and otherwise the descr itself.
func (h NPYHeader) DType() string {
	if d, ok := dtypes[h.Descr]; ok {
		return d.name
	}
	return h.Descr
}

// Len is the number of elements the shape declares, or -1 if it overflows an int.
func (h NPYHeader) Len() int {
	n := 1
	for _, d := range h.Shape {
		if d != 0 && n > math.MaxInt/d {
			return -1
		}
		n *= d
	}
	return n
}

// dtypes are the element types lossgen reads: their names and sizes in bytes.
var dtypes = map[string]struct {
	name string
	size int
}{
	"<f4": {"float32", 4}, "<f8": {"float64", 8}, "|b1": {"bool", 1}, "<i8": {"int64", 8}, "|u1": {"uint8", 1},
	// Narrower integers (NumPy's default int is int32 on Windows) widen exactly to int64.
	"|i1": {"int8", 1}, "<i2": {"int16", 2}, "<i4": {"int32", 4}, "<u2": {"uint16", 2}, "<u4": {"uint32", 4}, "<u8": {"uint64", 8},
}

// unsupported is the error for an array of a dtype lossgen does not read.
func unsupported(descr string) error {
	return fmt.Errorf("unsupported dtype %q (want float32, float64, bool, or a little-endian integer type: int8 to int64, uint8 to uint64)", descr)
}

// readNPYHeader reads an .npy preamble and header from r: format 1.x (2-byte header length),
// 2.x (4-byte length) or 3.x (as 2.x, the header UTF-8). It returns the header and its length
// in bytes, preamble included. At most maxHeaderLen bytes are read for the header.
func readNPYHeader(r io.Reader) (NPYHeader, int, error) {
	var pre [12]byte
	k, err := io.ReadFull(r, pre[:10])
	switch {
	case k < 6 || string(pre[:6]) != "\x93NUMPY":
		return NPYHeader{}, 0, fmt.Errorf("no .npy magic")
	case err != nil:
		return NPYHeader{}, 0, fmt.Errorf("truncated .npy header")
	}
	major, minor := pre[6], pre[7]
	var n, start int
	switch major {
	case 1:
		n, start = int(binary.LittleEndian.Uint16(pre[8:10])), 10
	case 2, 3:
		if _, err := io.ReadFull(r, pre[10:12]); err != nil {
			return NPYHeader{}, 0, fmt.Errorf("truncated .npy header")
		}
		n64, start64 := binary.LittleEndian.Uint32(pre[8:12]), 12
		if n64 > maxHeaderLen {
			return NPYHeader{}, 0, fmt.Errorf(".npy header of %d bytes (at most %d are read)", n64, maxHeaderLen)
		}
		n, start = int(n64), start64
	default:
		return NPYHeader{}, 0, fmt.Errorf(".npy format %d.%d (lossgen reads 1.x, 2.x and 3.x)", major, minor)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return NPYHeader{}, 0, fmt.Errorf("truncated or malformed .npy header")
	}
	if major == 3 && !utf8.Valid(buf) {
		return NPYHeader{}, 0, fmt.Errorf(".npy 3.0 header is not UTF-8")
	}
	h, err := parseHeader(string(buf))
	if err != nil {
		return NPYHeader{}, 0, fmt.Errorf("malformed .npy header: %w", err)
	}
	return h, start + n, nil
}

// parseHeader reads the header's Python dict literal, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (64, 421), }.
func parseHeader(s string) (NPYHeader, error) {
	p := &pyParser{s: strings.TrimRight(s, " \n\x00")}
	v, err := p.value()
	if err != nil {
		return NPYHeader{}, err
	}
	if p.skip(); p.i != len(p.s) {
		return NPYHeader{}, fmt.Errorf("text after the dict at byte %d", p.i)
	}
	d, ok := v.(map[string]any)
	if !ok {
		return NPYHeader{}, fmt.Errorf("not a dict")
	}
	var h NPYHeader
	descr, ok := d["descr"].(string)
	if !ok {
		if _, found := d["descr"]; found {
			return NPYHeader{}, fmt.Errorf("structured dtype %v (lossgen reads plain arrays)", d["descr"])
		}
		return NPYHeader{}, fmt.Errorf("no 'descr'")
	}
	h.Descr = descr
	if h.Fortran, ok = d["fortran_order"].(bool); !ok {
		return NPYHeader{}, fmt.Errorf("no boolean 'fortran_order'")
	}
	shape, ok := d["shape"].([]any)
	if !ok {
		return NPYHeader{}, fmt.Errorf("no tuple 'shape'")
	}
	h.Shape = []int{}
	for _, x := range shape {
		k, ok := x.(int)
		if !ok || k < 0 {
			return NPYHeader{}, fmt.Errorf("bad shape %v", shape)
		}
		h.Shape = append(h.Shape, k)
	}
	return h, nil
}

// pyParser reads the Python literals an .npy header holds: dicts, tuples and lists,
// strings, non-negative integers, True, False and None.
type pyParser struct {
	s string
	i int
}

func (p *pyParser) skip() {
	for p.i < len(p.s) && strings.IndexByte(" \t\n\r", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *pyParser) value() (any, error) {
	p.skip()
	if p.i >= len(p.s) {
		return nil, fmt.Errorf("unexpected end")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		d := map[string]any{}
		err := p.items('}', func() error {
			k, err := p.value()
			if err != nil {
				return err
			}
			key, ok := k.(string)
			if p.skip(); !ok || p.i >= len(p.s) || p.s[p.i] != ':' {
				return fmt.Errorf("bad dict entry at byte %d", p.i)
			}
			p.i++
			v, err := p.value()
			d[key] = v
			return err
		})
		return d, err
	case c == '(' || c == '[':
		var xs []any
		err := p.items(map[byte]byte{'(': ')', '[': ']'}[c], func() error {
			v, err := p.value()
			xs = append(xs, v)
			return err
		})
		return xs, err
	case c == '\'' || c == '"':
		end := strings.IndexByte(p.s[p.i+1:], c)
		if end < 0 {
			return nil, fmt.Errorf("unterminated string")
		}
		v := p.s[p.i+1 : p.i+1+end]
		p.i += end + 2
		return v, nil
	case c >= '0' && c <= '9':
		j := p.i
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
		n, err := strconv.Atoi(p.s[j:p.i])
		if p.i < len(p.s) && p.s[p.i] == 'L' { // Python 2's long suffix
			p.i++
		}
		return n, err
	}
	for word, v := range map[string]any{"True": true, "False": false, "None": nil} {
		if strings.HasPrefix(p.s[p.i:], word) {
			p.i += len(word)
			return v, nil
		}
	}
	return nil, fmt.Errorf("unexpected %q at byte %d", p.s[p.i], p.i)
}

// items reads comma-separated items up to close (a trailing comma allowed), the opening
// bracket at p.i.
func (p *pyParser) items(close byte, item func() error) error {
	p.i++
	for {
		if p.skip(); p.i < len(p.s) && p.s[p.i] == close {
			p.i++
			return nil
		}
		if err := item(); err != nil {
			return err
		}
		p.skip()
		switch {
		case p.i >= len(p.s):
			return fmt.Errorf("unexpected end")
		case p.s[p.i] == ',':
			p.i++
		case p.s[p.i] != close:
			return fmt.Errorf("unexpected %q at byte %d", p.s[p.i], p.i)
		}
	}
}

// readNPYData reads n elements of the header's dtype from r, in chunks, into a typed
// slice: the only allocation proportional to the data is the result itself. A bool is
// true for any nonzero byte, as NumPy reads it. uint8 is read as bool when every value is 0
// or 1 (flags saved as torch.uint8), and otherwise, like every other integer type, widened
// exactly to int64 (indices); a uint64 above the int64 range is an error.
func readNPYData(r io.Reader, descr string, n int) (any, error) {
	switch descr {
	case "<f4":
		return decode(r, n, 4, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) })
	case "<f8":
		return decode(r, n, 8, func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) })
	case "<i8":
		return decode(r, n, 8, func(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) })
	case "|b1":
		return decode(r, n, 1, func(b []byte) bool { return b[0] != 0 })
	case "|u1":
		x, err := decode(r, n, 1, func(b []byte) int64 { return int64(b[0]) })
		if err != nil || slices.ContainsFunc(x, func(v int64) bool { return v > 1 }) {
			return x, err
		}
		flags := make([]bool, len(x))
		for i, v := range x {
			flags[i] = v == 1
		}
		return flags, nil
	case "|i1":
		return decode(r, n, 1, func(b []byte) int64 { return int64(int8(b[0])) })
	case "<i2":
		return decode(r, n, 2, func(b []byte) int64 { return int64(int16(binary.LittleEndian.Uint16(b))) })
	case "<i4":
		return decode(r, n, 4, func(b []byte) int64 { return int64(int32(binary.LittleEndian.Uint32(b))) })
	case "<u2":
		return decode(r, n, 2, func(b []byte) int64 { return int64(binary.LittleEndian.Uint16(b)) })
	case "<u4":
		return decode(r, n, 4, func(b []byte) int64 { return int64(binary.LittleEndian.Uint32(b)) })
	case "<u8":
		bad, at, i := uint64(0), -1, -1
		x, err := decode(r, n, 8, func(b []byte) int64 {
			v := binary.LittleEndian.Uint64(b)
			if i++; v > math.MaxInt64 && at < 0 {
				bad, at = v, i
			}
			return int64(v)
		})
		if err == nil && at >= 0 {
			return nil, fmt.Errorf("uint64 array holds %d at flat index %d, beyond int64", bad, at)
		}
		return x, err
	}
	return nil, unsupported(descr)
}

// decode reads n elements of size bytes each, converting each with conv.
func decode[T any](r io.Reader, n, size int, conv func([]byte) T) ([]T, error) {
	out := make([]T, n)
	buf := make([]byte, min(n*size, (64<<10)/size*size))
	for i := 0; i < n; {
		k := min(n-i, len(buf)/size)
		if _, err := io.ReadFull(r, buf[:k*size]); err != nil {
			return nil, err
		}
		for j := range k {
			out[i+j] = conv(buf[j*size:])
		}
		i += k
	}
	return out, nil
}
