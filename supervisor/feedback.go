package supervisor

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/task"
)

// Bounds of what a follow-up prompt shows of one failed criterion, and of the hidden
// material read to cut it (the reference and grader files).
const (
	maxFeedbackDetail   = 2 << 10
	maxHiddenFileBytes  = 8 << 20
	maxHiddenTotalBytes = 64 << 20
	// hiddenRun is the shortest run of bytes shared with hidden material that is cut from a
	// detail; a hidden text shorter than it is cut where it stands as a whole word.
	hiddenRun = 8
	hiddenCut = "[hidden]"
)

// FeedbackPrompt is the follow-up prompt of a failed iteration, holding only what the
// task's iterations.feedback allows: with none, only that the work did not pass; with
// descriptions, each failed criterion's description as the task wrote it; with details,
// also the grader's details with every run of hidden material cut out (see cutHidden).
// Never a reference file, an expected value or any other internal of a criterion.
func FeedbackPrompt(t *task.Task, g *grader.Result, hidden [][]byte) string {
	level := task.FeedbackNone
	if t.Iterations != nil {
		level = t.Iterations.Feedback
	}
	var b strings.Builder
	b.WriteString("Your work on this task was checked and it does not pass yet. Keep working in /workspace until it is done.\n")
	if level == task.FeedbackNone {
		return b.String()
	}
	b.WriteString("\nThese checks failed:\n")
	for _, c := range g.Criteria {
		if c.Passed {
			continue
		}
		desc := strings.TrimSpace(c.Description)
		if desc == "" {
			desc = "(a check without a description)"
		}
		fmt.Fprintf(&b, "- %s\n", oneLine(desc))
		if level == task.FeedbackDetails && strings.TrimSpace(c.Details) != "" {
			d := c.Details
			if len(d) > maxFeedbackDetail {
				d = d[:maxFeedbackDetail]
			}
			d = cutHidden(d, hidden)
			fmt.Fprintf(&b, "  details: %s\n", strings.ReplaceAll(strings.TrimSpace(d), "\n", "\n  "))
		}
	}
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// HiddenMaterial is every text a follow-up prompt must not reveal: each string a criterion
// holds beyond its type, path and description (expected output, patterns, labels,
// commands, rubrics, schemas, ...), the task's host paths, and the content of the task's
// reference directory and grader files. Files are read through the handles the task opened at load, without
// following links out of them.
func HiddenMaterial(t *task.Task) ([][]byte, error) {
	var out [][]byte
	paths := []string{t.Path, t.Dir}
	if t.Reference != nil {
		paths = append(paths, t.Reference.Path)
	}
	for _, p := range paths {
		if p != "" {
			out = append(out, []byte(p))
		}
	}
	for _, c := range t.Criteria {
		v := reflect.ValueOf(c)
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			switch {
			case !f.IsExported(), f.Name == "Type", f.Name == "Description", f.Name == "Path", f.Name == "Alias":
				continue
			}
			collectStrings(v.Field(i), &out, 0, false)
		}
	}
	// Details quote what they show (Go's %q, JSON): a multi-line expected output appears
	// there escaped, never as its raw bytes. Cut those forms too.
	for _, h := range slices.Clone(out) {
		for _, f := range quotedForms(h) {
			out = append(out, f)
		}
	}
	total := int64(0)
	read := func(root fs.FS, name string) error {
		return fs.WalkDir(root, name, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.Type().IsRegular() {
				return nil
			}
			f, err := root.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			data, err := io.ReadAll(io.LimitReader(f, maxHiddenFileBytes))
			if err != nil {
				return err
			}
			if total += int64(len(data)); total > maxHiddenTotalBytes {
				return fmt.Errorf("the reference and grader files hold more than %d MiB; iterations.feedback: details cannot check details against them (use descriptions)", maxHiddenTotalBytes>>20)
			}
			out = append(out, data)
			return nil
		})
	}
	if t.Reference != nil && t.Reference.Root() != nil {
		if err := read(t.Reference.Root().FS(), "."); err != nil {
			return nil, fmt.Errorf("reference directory: %w", err)
		}
	}
	for _, g := range t.GraderFiles {
		if g.Root == nil || g.Root.Root() == nil {
			continue
		}
		if err := read(g.Root.Root().FS(), g.Rel); err != nil {
			return nil, fmt.Errorf("grader file %s: %w", g.Rel, err)
		}
	}
	return out, nil
}

// quotedForms are the forms in which h appears inside a detail that quotes it: Go's %q and
// JSON, each also without its surrounding quotes; none when they equal h.
func quotedForms(h []byte) [][]byte {
	var out [][]byte
	add := func(q string) {
		for _, f := range []string{q, strings.TrimSuffix(strings.TrimPrefix(q, `"`), `"`)} {
			if f != string(h) && f != "" {
				out = append(out, []byte(f))
			}
		}
	}
	add(strconv.Quote(string(h)))
	if j, err := json.Marshal(string(h)); err == nil {
		add(string(j))
	}
	return out
}

// collectStrings appends every string below v: fields, slices, maps, pointers and
// interfaces (a decoded JSON Schema), to a bounded depth; open files are not read here.
// Below an interface (a decoded YAML/JSON value, such as json_check's expected) numbers and
// booleans are expected values too: they are appended as a detail prints them.
func collectStrings(v reflect.Value, out *[][]byte, depth int, dynamic bool) {
	if depth > 12 || !v.IsValid() {
		return
	}
	switch v.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		if dynamic {
			*out = append(*out, []byte(fmt.Sprint(v.Interface())))
			if j, err := json.Marshal(v.Interface()); err == nil {
				*out = append(*out, j)
			}
		}
	case reflect.String:
		if s := v.String(); s != "" {
			*out = append(*out, []byte(s))
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			if v.Len() > 0 {
				*out = append(*out, v.Bytes())
			}
			return
		}
		for i := 0; i < v.Len(); i++ {
			collectStrings(v.Index(i), out, depth+1, dynamic)
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			collectStrings(it.Key(), out, depth+1, dynamic)
			collectStrings(it.Value(), out, depth+1, dynamic)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			collectStrings(v.Elem(), out, depth+1, dynamic || v.Kind() == reflect.Interface)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				collectStrings(v.Field(i), out, depth+1, dynamic)
			}
		}
	}
}

// cutHidden replaces with [hidden] every run of hiddenRun or more bytes of s that also
// occurs in a hidden text, and every whole-word occurrence of a shorter hidden text, so
// neither a hidden text nor a fragment of it survives. It reads each hidden text once,
// against an index of s's own 8-byte windows.
func cutHidden(s string, hidden [][]byte) string {
	if s == "" {
		return s
	}
	cut := make([]bool, len(s))
	windows := map[uint64][]int{}
	for i := 0; i+hiddenRun <= len(s); i++ {
		w := binary.LittleEndian.Uint64([]byte(s[i : i+hiddenRun]))
		windows[w] = append(windows[w], i)
	}
	for _, h := range hidden {
		if len(h) >= hiddenRun {
			for i := 0; i+hiddenRun <= len(h); i++ {
				for _, p := range windows[binary.LittleEndian.Uint64(h[i:i+hiddenRun])] {
					for k := p; k < p+hiddenRun; k++ {
						cut[k] = true
					}
				}
			}
		}
		// A short text, or the trimmed form of any (an expected "42\n" shows as 42),
		// wherever it stands as a whole word.
		for _, w := range []string{string(h), strings.TrimSpace(string(h))} {
			if w == "" || len(w) >= hiddenRun {
				continue
			}
			for from := 0; ; {
				i := strings.Index(s[from:], w)
				if i < 0 {
					break
				}
				i += from
				if wordEdge(s, i-1) && wordEdge(s, i+len(w)) {
					for k := i; k < i+len(w); k++ {
						cut[k] = true
					}
				}
				from = i + 1
			}
		}
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if !cut[i] {
			b.WriteByte(s[i])
			i++
			continue
		}
		for i < len(s) && cut[i] {
			i++
		}
		b.WriteString(hiddenCut)
	}
	return strings.ToValidUTF8(b.String(), "")
}

// wordEdge says whether the byte at i is outside s or not a letter or digit.
func wordEdge(s string, i int) bool {
	if i < 0 || i >= len(s) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return !unicode.IsLetter(r) && !unicode.IsDigit(r)
}
