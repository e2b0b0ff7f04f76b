//go:build !toolboxlite

package cmds

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/itchyny/gojq"
)

// jq runs gojq. Differences from jq 1.7 are gojq's: object keys are always sorted, and
// numbers are 64-bit floats or integers.
func jq(e *Env, args []string) int {
	// Codes of the long-only options.
	const (
		optArg = 1 + iota
		optArgJSON
		optSlurpFile
		optRawFile
		optIndent
		optTab
	)
	// -S, -M, -C and -a are accepted: gojq always sorts keys and never colours.
	fl := newFlags("jq", "rjcnseRSMCa", "")
	for name, c := range map[string]byte{"raw-output": 'r', "join-output": 'j', "compact-output": 'c',
		"null-input": 'n', "slurp": 's', "exit-status": 'e', "raw-input": 'R', "sort-keys": 'S',
		"monochrome-output": 'M', "color-output": 'C', "ascii-output": 'a', "tab": optTab} {
		fl.longs[name] = c
	}
	for name, c := range map[string]byte{"arg": optArg, "argjson": optArgJSON, "slurpfile": optSlurpFile,
		"rawfile": optRawFile, "indent": optIndent} {
		fl.longVals[name] = c
		if c != optIndent {
			fl.longArgs[name] = 2
		}
	}
	rest, err := fl.parse(args)
	if err != nil {
		e.errf("jq", "%v", err)
		return 2
	}
	raw, join, compact, null := fl.has('r') || fl.has('j'), fl.has('j'), fl.has('c'), fl.has('n')
	slurp, exitStatus, rawIn, tab := fl.has('s'), fl.has('e'), fl.has('R'), fl.has(optTab)
	indent := 2
	if fl.has(optIndent) {
		indent, _ = strconv.Atoi(fl.val(optIndent))
	}
	var varNames []string
	var varVals []any
	for _, o := range fl.order {
		var v any
		switch o.c {
		case optArg:
			v = o.vals[1]
		case optArgJSON:
			dec := json.NewDecoder(strings.NewReader(o.vals[1]))
			dec.UseNumber()
			if err := dec.Decode(&v); err != nil {
				e.errf("jq", "invalid JSON text passed to --argjson")
				return 2
			}
			v = normalizeJSON(v)
		case optSlurpFile, optRawFile:
			data, err := e.ReadFile(o.vals[1])
			if err != nil {
				e.errf("jq", "%s: %v", o.vals[1], err)
				return 2
			}
			v = string(data)
			if o.c == optSlurpFile {
				vals, err := decodeAll(bytes.NewReader(data))
				if err != nil {
					e.errf("jq", "%s: %v", o.vals[1], err)
					return 2
				}
				v = vals
			}
		default:
			continue
		}
		varNames, varVals = append(varNames, "$"+o.vals[0]), append(varVals, v)
	}
	filter, files := ".", rest
	if len(rest) > 0 {
		filter, files = rest[0], rest[1:]
	}
	q, err := gojq.Parse(filter)
	if err != nil {
		e.errf("jq", "error: %v\njq: 1 compile error", err)
		return 3
	}
	// inputs: decoded lazily into a queue shared by the main loop and input/inputs.
	var data bytes.Buffer
	st := e.inputs("jq", files, func(_ string, r io.Reader) error {
		_, err := io.Copy(&data, r)
		return err
	})
	if st != 0 {
		return 2
	}
	var values []any
	if rawIn {
		if slurp {
			values = []any{data.String()}
		} else {
			for _, l := range splitLines(data.String()) {
				values = append(values, l)
			}
		}
	} else {
		values, err = decodeAll(&data)
		if err != nil {
			e.errf("jq", "error (at <stdin>:0): %v", err)
			return 2
		}
		if slurp {
			values = []any{values}
		}
	}
	pos := 0
	inputIter := &jqInputs{values: &values, pos: &pos}
	opts := []gojq.CompilerOption{gojq.WithVariables(varNames), gojq.WithInputIter(inputIter)}
	if e.Environ != nil {
		opts = append(opts, gojq.WithEnvironLoader(e.Environ))
	}
	code, err := gojq.Compile(q, opts...)
	if err != nil {
		e.errf("jq", "error: %v\njq: 1 compile error", err)
		return 3
	}
	o := e.out()
	status := 0
	var last any = nil
	produced := false
	runOne := func(v any) bool {
		iter := code.RunWithContext(e.Ctx, v, varVals...)
		for {
			out, ok := iter.Next()
			if !ok {
				return true
			}
			if err, isErr := out.(error); isErr {
				var halt *gojq.HaltError
				if errors.As(err, &halt) {
					if hv := halt.Value(); hv != nil {
						if s, ok := hv.(string); ok {
							fmt.Fprint(e.Stderr, s)
						} else {
							b, _ := gojq.Marshal(hv)
							fmt.Fprintln(e.Stderr, string(b))
						}
					}
					status = halt.ExitCode()
					return false
				}
				msg := err.Error()
				var ve gojq.ValueError
				if errors.As(err, &ve) {
					if s, ok := ve.Value().(string); ok {
						msg = s
					}
				}
				o.Flush()
				fmt.Fprintf(e.Stderr, "jq: error (at <stdin>:0): %s\n", msg)
				status = 5
				continue
			}
			produced, last = true, out
			if s, ok := out.(string); ok && raw {
				o.WriteString(s)
			} else {
				b, _ := gojq.Marshal(out)
				if !compact {
					var buf bytes.Buffer
					ind := strings.Repeat(" ", indent)
					if tab {
						ind = "\t"
					}
					if indent == 0 && !tab {
						buf.Write(b)
					} else if json.Indent(&buf, b, "", ind) == nil {
						b = buf.Bytes()
					}
				}
				o.Write(b)
			}
			if !join {
				o.WriteString("\n")
			}
		}
	}
	if null {
		runOne(nil)
	} else {
		for pos < len(values) {
			v := values[pos]
			pos++
			if !runOne(v) {
				break
			}
		}
	}
	if status == 0 && exitStatus {
		switch {
		case !produced:
			status = 4
		case last == nil || last == false:
			status = 1
		}
	}
	return o.done(status)
}

type jqInputs struct {
	values *[]any
	pos    *int
}

func (it *jqInputs) Next() (any, bool) {
	if *it.pos >= len(*it.values) {
		return nil, false
	}
	v := (*it.values)[*it.pos]
	*it.pos++
	return v, true
}

func decodeAll(r io.Reader) ([]any, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	var out []any
	for {
		var v any
		if err := dec.Decode(&v); err == io.EOF {
			return out, nil
		} else if err != nil {
			return out, err
		}
		out = append(out, normalizeJSON(v))
	}
}

// normalizeJSON turns json.Number into int or float64, the number types gojq computes with.
func normalizeJSON(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil && i >= math.MinInt && i <= math.MaxInt {
			return int(i)
		}
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	case []any:
		for i := range x {
			x[i] = normalizeJSON(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = normalizeJSON(x[k])
		}
	}
	return v
}
