//go:build !toolboxlite

package cmds

// mkdir, rm and touch: the commands that change the directory tree.

import (
	"os"
	"time"
)

func mkdir(e *Env, args []string) int {
	fl := newFlags("mkdir", "pv", "m")
	dirs, err := fl.parse(args)
	if err != nil {
		e.errf("mkdir", "%v", err)
		return 1
	}
	status := 0
	for _, d := range dirs {
		if fl.has('p') {
			err = os.MkdirAll(e.Path(d), 0o755)
		} else {
			err = os.Mkdir(e.Path(d), 0o755)
		}
		if err != nil {
			e.errf("mkdir", "cannot create directory '%s': %v", d, cleanErr(err))
			status = 1
		}
	}
	return status
}

func rm(e *Env, args []string) int {
	fl := newFlags("rm", "rRfv", "")
	names, err := fl.parse(args)
	if err != nil {
		e.errf("rm", "%v", err)
		return 1
	}
	status := 0
	for _, n := range names {
		p := e.Path(n)
		st, err := os.Lstat(p)
		if err != nil {
			if !fl.has('f') {
				e.errf("rm", "cannot remove '%s': %v", n, cleanErr(err))
				status = 1
			}
			continue
		}
		if st.IsDir() && !fl.has('r') && !fl.has('R') {
			e.errf("rm", "cannot remove '%s': Is a directory", n)
			status = 1
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			e.errf("rm", "cannot remove '%s': %v", n, cleanErr(err))
			status = 1
		}
	}
	return status
}

func touch(e *Env, args []string) int {
	// Times are always set to now: the options choosing other times are accepted and ignored.
	fl := newFlags("touch", "acfhm", "drt")
	fl.longs["no-create"] = 'c'
	fl.longs["no-dereference"] = 'h'
	fl.longVals["date"] = 'd'
	fl.longVals["reference"] = 'r'
	names, err := fl.parse(args)
	if err != nil {
		e.errf("touch", "%v", err)
		return 1
	}
	status := 0
	for _, n := range names {
		p := e.Path(n)
		if _, err := os.Stat(p); err == nil {
			now := time.Now()
			os.Chtimes(p, now, now)
			continue
		}
		if fl.has('c') {
			continue
		}
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			e.errf("touch", "cannot touch '%s': %v", n, cleanErr(err))
			status = 1
			continue
		}
		f.Close()
	}
	return status
}
