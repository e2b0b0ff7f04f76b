//go:build !toolboxlite

package cmds

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strings"
)

func sha256sum(e *Env, args []string) int { return hashsum(e, "sha256sum", sha256.New, args) }
func md5sum(e *Env, args []string) int    { return hashsum(e, "md5sum", md5.New, args) }

func hashsum(e *Env, name string, newHash func() hash.Hash, args []string) int {
	fl := newFlags(name, "cbtqsz", "")
	fl.longs["check"] = 'c'
	fl.longs["quiet"] = 'q'
	fl.longs["status"] = 's'
	files, err := fl.parse(args)
	if err != nil {
		e.errf(name, "%v", err)
		return 1
	}
	sum := func(r io.Reader) (string, error) {
		h := newHash()
		if _, err := io.Copy(h, r); err != nil {
			return "", err
		}
		return hex.EncodeToString(h.Sum(nil)), nil
	}
	if !fl.has('c') {
		o := e.out()
		st := e.inputs(name, files, func(f string, r io.Reader) error {
			s, err := sum(r)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(o, "%s  %s\n", s, f)
			return err
		})
		return o.done(st)
	}
	status, failed := 0, 0
	st := e.inputs(name, files, func(_ string, r io.Reader) error {
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		for _, line := range splitLines(string(data)) {
			want, file, ok := strings.Cut(line, "  ")
			if !ok {
				want, file, ok = strings.Cut(line, " *")
			}
			if !ok {
				continue
			}
			rc, err := e.Open(file)
			if err != nil {
				fmt.Fprintf(e.Stdout, "%s: FAILED open or read\n", file)
				failed++
				continue
			}
			got, err := sum(rc)
			rc.Close()
			if err != nil || got != want {
				failed++
				if !fl.has('s') {
					fmt.Fprintf(e.Stdout, "%s: FAILED\n", file)
				}
			} else if !fl.has('q') && !fl.has('s') {
				fmt.Fprintf(e.Stdout, "%s: OK\n", file)
			}
		}
		return nil
	})
	if failed > 0 {
		if !fl.has('s') {
			fmt.Fprintf(e.Stderr, "%s: WARNING: %d computed checksum did NOT match\n", name, failed)
		}
		status = 1
	}
	return max(status, st)
}
