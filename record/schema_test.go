package record_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"ceval.dev/ceval/record"
)

var update = flag.Bool("update", false, "rewrite testdata/*.json from the current types")

// fill sets every exported, JSON-visible field reachable from v to a value of its own
// (strings are their JSON path, numbers count up), so a golden of it shows every field's name,
// position and encoding: a field renamed, moved, retagged or dropped changes the golden.
func fill(v reflect.Value, path string, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), path, n)
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case f.Anonymous && name == "":
				fill(v.Field(i), path, n) // its fields are the outer object's
			case name == "":
				fill(v.Field(i), path+"."+f.Name, n)
			default:
				fill(v.Field(i), path+"."+name, n)
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), path+"[0]", n)
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			fill(v.Index(i), path+"["+strconv.Itoa(i)+"]", n)
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		fill(k, path+".key", n)
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, path+".value", n)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString(strings.TrimPrefix(path, "."))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	default:
		panic("fill: unhandled kind " + v.Kind().String() + " at " + path)
	}
}

func filled[T any]() *T {
	var x T
	n := 0
	fill(reflect.ValueOf(&x).Elem(), "", &n)
	return &x
}

// TestRecordJSONIsUnchanged holds the run record's files byte for byte: each type fully
// populated, and empty (what omitempty leaves out), against testdata written before the
// types moved into record (result.json's grade, gateway totals and mock stats were
// grader's, gateway's and mockd's). Decoding a golden and encoding it again gives it back.
func TestRecordJSONIsUnchanged(t *testing.T) {
	for _, c := range []struct {
		name  string
		value any
		fresh func() any
	}{
		{"result_full", filled[record.Result](), func() any { return new(record.Result) }},
		{"result_empty", new(record.Result), func() any { return new(record.Result) }},
		{"plan_full", filled[record.Plan](), func() any { return new(record.Plan) }},
		{"plan_empty", new(record.Plan), func() any { return new(record.Plan) }},
		{"prompts_full", filled[record.Prompts](), func() any { return new(record.Prompts) }},
		{"stopped_early_full", filled[record.EarlyStop](), func() any { return new(record.EarlyStop) }},
		{"stopped_early_empty", new(record.EarlyStop), func() any { return new(record.EarlyStop) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := record.Marshal(c.value)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", c.name+".json")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s changed (field names, order and omitempty must stay):\n got %s\nwant %s", golden, got, want)
			}
			back := c.fresh()
			if err := json.Unmarshal(want, back); err != nil {
				t.Fatal(err)
			}
			again, err := record.Marshal(back)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, want) {
				t.Errorf("%s does not survive decoding and encoding:\n got %s\nwant %s", golden, again, want)
			}
		})
	}
}
