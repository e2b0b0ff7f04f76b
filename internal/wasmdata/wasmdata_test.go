package wasmdata

import (
	"bytes"
	"context"
	"testing"

	"github.com/tetratelabs/wazero"

	"ceval.dev/ceval/internal/embedded"
)

type seg struct {
	flags  byte // 0 active, 1 passive
	offset int32
	data   string
}

// module builds a module with one exported memory of pages pages and the given segments,
// plus a data count section when dataCount.
func module(pages byte, segs []seg, dataCount bool) []byte {
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, 5, 3, 1, 0, pages)     // memory: min pages
	m = append(m, 7, 5, 1, 1, 'm', 2, 0) // export "m" memory 0
	if dataCount {
		m = append(m, 12, 1, byte(len(segs)))
	}
	var p []byte
	p = appendUleb(p, uint64(len(segs)))
	for _, s := range segs {
		p = append(p, s.flags)
		if s.flags == 0 {
			p = append(p, 0x41)
			p = appendSleb(p, int64(s.offset))
			p = append(p, 0x0b)
		}
		p = appendUleb(p, uint64(len(s.data)))
		p = append(p, s.data...)
	}
	m = append(m, 11)
	m = appendUleb(m, uint64(len(p)))
	return append(m, p...)
}

// image instantiates module without running anything and returns its memory.
func image(t *testing.T, module []byte) []byte {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	mod, err := rt.InstantiateWithConfig(ctx, module, wazero.NewModuleConfig().WithStartFunctions())
	if err != nil {
		t.Fatal(err)
	}
	mem, ok := mod.Memory().Read(0, mod.Memory().Size())
	if !ok {
		t.Fatal("memory unreadable")
	}
	return bytes.Clone(mem)
}

func countSegments(t *testing.T, module []byte) int {
	t.Helper()
	for i := 8; i < len(module); {
		size, n := uleb(module[i+1:])
		if module[i] == 11 {
			c, _ := uleb(module[i+1+n:])
			return int(c)
		}
		i += 1 + n + int(size)
	}
	return 0
}

func TestMergeKeepsTheMemoryImage(t *testing.T) {
	for _, tc := range []struct {
		name string
		segs []seg
		want int // segments after
	}{
		{"adjacent and close", []seg{{0, 16, "ab"}, {0, 18, "cd"}, {0, 100, "ef"}}, 1},
		{"out of order", []seg{{0, 100, "ef"}, {0, 16, "ab"}, {0, 40, "cd"}}, 1},
		{"far apart", []seg{{0, 0, "a"}, {0, MaxGap + 2, "b"}, {0, MaxGap + 4, "c"}}, 2},
		{"the gap limit exactly", []seg{{0, 0, "a"}, {0, 1 + MaxGap, "b"}}, 1},
		{"empty segments", []seg{{0, 5, ""}, {0, 5, "x"}, {0, 9, ""}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := module(1, tc.segs, false)
			out, changed, err := Merge(in)
			if err != nil || !changed {
				t.Fatalf("Merge: changed %v, err %v", changed, err)
			}
			if got := countSegments(t, out); got != tc.want {
				t.Errorf("%d segments after, want %d", got, tc.want)
			}
			if !bytes.Equal(image(t, in), image(t, out)) {
				t.Error("the merged module's initial memory differs")
			}
		})
	}
}

func TestMergeLeavesWhatItMayNotMove(t *testing.T) {
	for _, tc := range []struct {
		name      string
		segs      []seg
		dataCount bool
	}{
		{"overlapping: order matters", []seg{{0, 16, "abcd"}, {0, 18, "XY"}}, false},
		{"a passive segment", []seg{{0, 16, "ab"}, {1, 0, "cd"}, {0, 20, "ef"}}, false},
		{"a data count section", []seg{{0, 16, "ab"}, {0, 18, "cd"}}, true},
		{"one segment", []seg{{0, 16, "ab"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := module(1, tc.segs, tc.dataCount)
			out, changed, err := Merge(in)
			if err != nil || changed || !bytes.Equal(in, out) {
				t.Errorf("Merge: changed %v, err %v, same bytes %v", changed, err, bytes.Equal(in, out))
			}
		})
	}
}

func TestMergeRejectsMalformedModules(t *testing.T) {
	good := module(1, []seg{{0, 16, "ab"}, {0, 18, "cd"}}, false)
	for name, m := range map[string][]byte{
		"not wasm":          []byte("\x7fELF...."),
		"truncated section": good[:len(good)-1],
		"segment past the section": func() []byte {
			b := bytes.Clone(good)
			b[len(b)-3] = 100 // the last segment's length
			return b
		}(),
	} {
		if _, _, err := Merge(m); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestMergedToolboxHasOneSegment checks that the committed toolbox is the merged build.
func TestMergedToolboxHasOneSegment(t *testing.T) {
	tb := embedded.Toolbox()
	if !bytes.HasPrefix(tb, []byte("\x00asm")) {
		t.Skip("this build embeds no toolbox")
	}
	if n := countSegments(t, tb); n > 8 {
		t.Errorf("the embedded toolbox has %d data segments: mk/embedded.mk did not merge them", n)
	}
}

func TestMergeLeavesAModuleImportingItsMemory(t *testing.T) {
	m := []byte("\x00asm\x01\x00\x00\x00")
	// import "env" "f" func 0 (a type section first), then "env" "mem" memory {min 1}
	m = append(m, 1, 4, 1, 0x60, 0, 0)
	imports := []byte{2, 3, 'e', 'n', 'v', 1, 'f', 0, 0, 3, 'e', 'n', 'v', 3, 'm', 'e', 'm', 2, 0, 1}
	m = append(m, 2, byte(len(imports)))
	m = append(m, imports...)
	data := []byte{2, 0, 0x41, 16, 0x0b, 2, 'a', 'b', 0, 0x41, 20, 0x0b, 2, 'c', 'd'}
	m = append(m, 11, byte(len(data)))
	m = append(m, data...)
	out, changed, err := Merge(m)
	if err != nil || changed || !bytes.Equal(out, m) {
		t.Errorf("Merge of a module importing its memory: changed %v, err %v", changed, err)
	}
}

// FuzzMerge: Merge never panics, and what it changes keeps its data section's image.
func FuzzMerge(f *testing.F) {
	f.Add(module(1, []seg{{0, 16, "ab"}, {0, 18, "cd"}, {0, 100, "ef"}}, false))
	f.Add(module(1, []seg{{0, -8, "ab"}, {0, 0x7ffffff0, "cd"}}, false))
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x0b\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x00")) // a section size of 2^64-1 (found by review)
	f.Fuzz(func(t *testing.T, m []byte) {
		out, changed, err := Merge(m)
		if err != nil || !changed {
			return
		}
		before, err := InitialMemory(m, 16<<20)
		if err != nil {
			t.Skip("an image too large to compare")
		}
		if after, err := InitialMemory(out, 16<<20); err != nil || !bytes.Equal(before, after) {
			t.Errorf("the image changed (err %v):\n%x\n%x", err, before, after)
		}
	})
}
