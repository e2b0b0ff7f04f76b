//go:build !toolboxlite

package cmds

import (
	"io"
	"strconv"
	"strings"
)

// xargs builds command lines from standard input and runs them as toolbox commands.
func xargs(e *Env, args []string) int {
	fl := newFlags("xargs", "0rtxp", "nLIdPs")
	fl.optional = "i"
	fl.longs["null"] = '0'
	fl.longs["no-run-if-empty"] = 'r'
	fl.longVals["max-args"] = 'n'
	fl.longVals["max-lines"] = 'L'
	fl.longVals["delimiter"] = 'd'
	fl.longVals["max-procs"] = 'P'
	command, err := fl.parse(args)
	if err != nil {
		e.errf("xargs", "%v", err)
		return 1
	}
	maxArgs, _ := strconv.Atoi(fl.val('n'))
	maxLines, _ := strconv.Atoi(fl.val('L'))
	replace, delim, noEmpty, nul := fl.val('I'), fl.val('d'), fl.has('r'), fl.has('0')
	if fl.has('i') && replace == "" {
		replace = fl.val('i')
		if replace == "" {
			replace = "{}"
		}
	}
	if delim == `\n` {
		delim = "\n"
	}
	if len(command) == 0 {
		command = []string{"echo"}
	}
	data, err := io.ReadAll(e.Stdin)
	if err != nil {
		return 1
	}
	var items []string
	var lines [][]string
	switch {
	case nul:
		items = strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
		if len(data) == 0 {
			items = nil
		}
	case delim != "":
		items = strings.Split(strings.TrimSuffix(string(data), delim), delim)
		if len(data) == 0 {
			items = nil
		}
	case replace != "":
		for _, l := range splitLines(string(data)) {
			if t := strings.TrimLeft(l, " \t"); t != "" {
				items = append(items, t)
			}
		}
	default:
		for _, l := range splitLines(string(data)) {
			w, err := shellWords(l)
			if err != nil {
				e.errf("xargs", "%v", err)
				return 1
			}
			if len(w) > 0 {
				lines = append(lines, w)
				items = append(items, w...)
			}
		}
	}
	run := func(argv []string) int {
		st := e.Run(argv, strings.NewReader(""), e.Stdout, e.Stderr)
		switch {
		case st == 127 || st == 126:
			return st
		case st == 255:
			return 124
		case st != 0:
			return 123
		}
		return 0
	}
	status := 0
	record := func(st int) bool {
		if st == 124 || st == 127 || st == 126 {
			status = st
			return false
		}
		if st != 0 {
			status = st
		}
		return true
	}
	if replace != "" {
		for _, it := range items {
			argv := make([]string, len(command))
			for j, c := range command {
				argv[j] = strings.ReplaceAll(c, replace, it)
			}
			if !record(run(argv)) {
				break
			}
		}
		return status
	}
	if len(items) == 0 {
		if noEmpty {
			return 0
		}
		return run(command)
	}
	if maxLines > 0 {
		for j := 0; j < len(lines); j += maxLines {
			var batch []string
			for _, l := range lines[j:min(j+maxLines, len(lines))] {
				batch = append(batch, l...)
			}
			if !record(run(append(append([]string(nil), command...), batch...))) {
				break
			}
		}
		return status
	}
	n := maxArgs
	if n <= 0 {
		n = len(items)
	}
	for j := 0; j < len(items); j += n {
		argv := append(append([]string(nil), command...), items[j:min(j+n, len(items))]...)
		if !record(run(argv)) {
			break
		}
	}
	return status
}

// shellWords splits a line as xargs does: blanks separate, quotes and backslashes escape.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case c == '\'' || c == '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return nil, errUnmatchedQuote(c)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			in = true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			in = true
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

type errUnmatchedQuote byte

func (q errUnmatchedQuote) Error() string {
	kind := "double"
	if q == '\'' {
		kind = "single"
	}
	return "unmatched " + kind + " quote; by default quotes are special to xargs unless you use the -0 option"
}
