// Package wasmdata reads a WebAssembly module's sections and initial memory, and rewrites
// its data section into few segments.
//
// Compilers emit one active data segment per symbol or per run of non-zero bytes: Go's
// wasip1 linker wrote 84,507 of them for ceval's toolbox, LLVM and wasm-opt 24,171 for
// CPython. A runtime evaluates each segment's offset and copies it on every instantiation
// (wazero spent some 3 ms of each 24 ms toolbox run there, allocating per segment), so
// Merge joins segments that lie close together, filling the gaps with the zeros that
// fresh linear memory holds anyway. The initial memory image is unchanged byte for byte.
// No tool at hand does this: wasm-opt's memory-packing splits segments the other way.
package wasmdata

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// MaxGap is the longest run of zeros Merge writes to join two segments.
const MaxGap = 4096

// Merge returns module with its data segments joined where no more than MaxGap bytes lie
// between them, and whether it changed anything. It changes nothing unless the module
// defines its memory (an imported one holds what its exporter wrote in the gaps), every
// segment is active in memory 0 at a constant i32 offset, no two overlap (so their order
// does not matter) and the module has no data count section (so no instruction names a
// segment by its index). Anything malformed it reads is an error.
func Merge(module []byte) ([]byte, bool, error) {
	sections, err := Sections(module)
	if err != nil {
		return nil, false, err
	}
	data := -1
	for i, sec := range sections {
		switch sec.ID {
		case 2:
			imported, err := importsMemory(sec.Payload)
			if err != nil || imported {
				return module, false, err // gaps hold what the exporting module wrote there
			}
		case 12:
			return module, false, nil // data count: code may name segments by index
		case 11:
			data = i
		}
	}
	if data < 0 {
		return module, false, nil
	}
	segs, ok, err := parseSegments(sections[data].Payload)
	if err != nil || !ok {
		return module, false, err
	}
	merged := mergeSegments(segs)
	if len(merged) == len(segs) {
		return module, false, nil
	}
	payload := appendUleb(nil, uint64(len(merged)))
	for _, s := range merged {
		payload = append(payload, 0, 0x41) // active, memory 0; i32.const
		payload = appendSleb(payload, int64(int32(s.offset)))
		payload = append(payload, 0x0b)
		payload = appendUleb(payload, uint64(len(s.data)))
		payload = append(payload, s.data...)
	}
	out := make([]byte, 0, len(module)+len(payload))
	out = append(out, module[:8]...)
	for i, sec := range sections {
		if i != data {
			out = append(out, sec.Raw...)
			continue
		}
		out = append(out, 11)
		out = appendUleb(out, uint64(len(payload)))
		out = append(out, payload...)
	}
	return out, true, nil
}

// Section is one section of a module.
type Section struct {
	ID      byte
	Payload []byte // the section's contents
	Raw     []byte // all of it: id, size and payload
}

// Sections splits a module into its sections, which share its bytes; an error when it is
// not a WebAssembly module or a section overruns it.
func Sections(module []byte) ([]Section, error) {
	if len(module) < 8 || !bytes.HasPrefix(module, []byte("\x00asm")) {
		return nil, errors.New("not a WebAssembly module")
	}
	var out []Section
	for rest := 8; rest < len(module); {
		size, n := uleb(module[rest+1:])
		if n == 0 || size > uint64(len(module)-rest-1-n) {
			return nil, errors.New("truncated section")
		}
		end := rest + 1 + n + int(size)
		out = append(out, Section{ID: module[rest], Payload: module[rest+1+n : end], Raw: module[rest:end]})
		rest = end
	}
	return out, nil
}

// CustomName is the name of a custom section (ID 0) from its payload.
func CustomName(payload []byte) (string, error) {
	l, n := uleb(payload)
	if n == 0 || l > uint64(len(payload)-n) {
		return "", errors.New("bad custom section name")
	}
	return string(payload[n : n+int(l)]), nil
}

// InitialMemory lays the active data segments of module out as its memory 0 starts, up to
// the end of the last one, which may lie no further than limit. Passive segments are left
// out; an offset other than i32.const is an error.
func InitialMemory(module []byte, limit uint64) ([]byte, error) {
	sections, err := Sections(module)
	if err != nil {
		return nil, err
	}
	for _, sec := range sections {
		if sec.ID == 11 {
			return layOut(sec.Payload, limit)
		}
	}
	return nil, errors.New("no data section")
}

// layOut copies each active segment of a data section's payload to its offset.
func layOut(p []byte, limit uint64) ([]byte, error) {
	segs, err := readSegments(p)
	if err != nil {
		return nil, err
	}
	var size uint64
	for _, s := range segs {
		if s.active() {
			size = max(size, uint64(s.offset)+uint64(len(s.data)))
		}
	}
	if size > limit {
		return nil, fmt.Errorf("data segments span %d bytes, over the limit of %d", size, limit)
	}
	img := make([]byte, size)
	for _, s := range segs {
		if s.active() {
			copy(img[s.offset:], s.data)
		}
	}
	return img, nil
}

// importsMemory says whether an import section's payload imports a memory (or something it
// cannot tell from one).
func importsMemory(p []byte) (bool, error) {
	count, n := uleb(p)
	if n == 0 {
		return false, errors.New("bad import section")
	}
	p = p[n:]
	name := func() bool { // skips a name; false when malformed
		l, n := uleb(p)
		if n == 0 || l > uint64(len(p)-n) {
			return false
		}
		p = p[n+int(l):]
		return true
	}
	limits := func() bool {
		if len(p) == 0 {
			return false
		}
		flags := p[0]
		p = p[1:]
		for range 1 + int(flags&1) { // min, and max when flagged
			_, n := uleb(p)
			if n == 0 {
				return false
			}
			p = p[n:]
		}
		return true
	}
	for range count {
		if !name() || !name() || len(p) == 0 {
			return false, errors.New("bad import")
		}
		kind := p[0]
		p = p[1:]
		ok := false
		switch kind {
		case 0: // function: type index
			_, n := uleb(p)
			ok, p = n > 0, p[min(n, len(p)):]
		case 1: // table: element type, limits
			if len(p) > 0 {
				p = p[1:]
				ok = limits()
			}
		case 3: // global: value type, mutability
			ok, p = len(p) >= 2, p[min(2, len(p)):]
		default: // a memory, or a kind this reader does not know: leave the module be
			return true, nil
		}
		if !ok {
			return false, fmt.Errorf("import of kind %d: malformed", kind)
		}
	}
	return false, nil
}

// segment is one data segment: flags 0 (active in memory 0), 1 (passive) or 2 (active in
// the memory it names); an active one's offset is an i32.const.
type segment struct {
	flags  uint64
	offset uint32
	data   []byte
}

func (s segment) active() bool { return s.flags != 1 }

var errOffset = errors.New("data segment offset is not an i32.const")

// readSegments reads a data section's payload.
func readSegments(p []byte) ([]segment, error) {
	count, n := uleb(p)
	if n == 0 || count > uint64(len(p)-n) {
		return nil, errors.New("bad data section")
	}
	p = p[n:]
	segs := make([]segment, 0, count)
	for i := range count {
		var s segment
		if s.flags, n = uleb(p); n == 0 || s.flags > 2 {
			return nil, fmt.Errorf("data segment %d: bad flags", i)
		}
		p = p[n:]
		if s.flags == 2 {
			if _, n = uleb(p); n == 0 {
				return nil, fmt.Errorf("data segment %d: bad memory index", i)
			}
			p = p[n:]
		}
		if s.active() {
			if len(p) < 1 || p[0] != 0x41 {
				return nil, fmt.Errorf("data segment %d: %w", i, errOffset)
			}
			v, n := sleb32(p[1:])
			if n == 0 || len(p) < 2+n || p[1+n] != 0x0b {
				return nil, fmt.Errorf("data segment %d: %w", i, errOffset)
			}
			s.offset = uint32(v)
			p = p[2+n:]
		}
		size, n := uleb(p)
		if n == 0 || size > uint64(len(p)-n) {
			return nil, fmt.Errorf("data segment %d: truncated", i)
		}
		s.data = p[n : n+int(size)]
		p = p[n+int(size):]
		segs = append(segs, s)
	}
	if len(p) != 0 {
		return nil, errors.New("data section: bytes after the last segment")
	}
	return segs, nil
}

// parseSegments reads a data section's payload for Merge, sorted by offset; ok is false
// when a segment is not one Merge may move (passive, in a memory named by index, at an
// offset that is not i32.const) or two overlap (then their order matters).
func parseSegments(p []byte) (segs []segment, ok bool, err error) {
	segs, err = readSegments(p)
	if errors.Is(err, errOffset) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	for _, s := range segs {
		if s.flags != 0 {
			return nil, false, nil
		}
	}
	slices.SortStableFunc(segs, func(a, b segment) int { return cmp.Compare(a.offset, b.offset) })
	for i := 1; i < len(segs); i++ {
		if uint64(segs[i].offset) < uint64(segs[i-1].offset)+uint64(len(segs[i-1].data)) {
			return nil, false, nil
		}
	}
	return segs, true, nil
}

// mergeSegments joins sorted, non-overlapping segments less than MaxGap apart.
func mergeSegments(segs []segment) []segment {
	var out []segment
	for _, s := range segs {
		if k := len(out) - 1; k >= 0 {
			end := uint64(out[k].offset) + uint64(len(out[k].data))
			if gap := uint64(s.offset) - end; gap <= MaxGap {
				out[k].data = append(out[k].data, make([]byte, gap)...)
				out[k].data = append(out[k].data, s.data...)
				continue
			}
		}
		out = append(out, segment{offset: s.offset, data: slices.Clone(s.data)})
	}
	return out
}

func uleb(b []byte) (v uint64, n int) {
	for shift := uint(0); n < len(b) && n < 10; shift += 7 {
		c := b[n]
		n++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, n
		}
	}
	return 0, 0
}

func sleb32(b []byte) (v int64, n int) {
	var shift uint
	for n < len(b) && n < 5 {
		c := b[n]
		n++
		v |= int64(c&0x7f) << shift
		shift += 7
		if c < 0x80 {
			if c&0x40 != 0 && shift < 64 {
				v |= -1 << shift
			}
			if v < -1<<31 || v >= 1<<31 {
				return 0, 0
			}
			return v, n
		}
	}
	return 0, 0
}

func appendUleb(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendSleb(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
