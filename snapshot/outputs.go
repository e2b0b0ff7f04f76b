package snapshot

import (
	"path"
	"strings"
)

// Output is the copy of one of the task's sandbox.outputs: Path is its absolute container
// path ("/output"), and the Snapshot's entries are relative to it.
type Output struct {
	Path string
	*Snapshot
}

// Resolve finds the snapshot that holds p and p's path inside it: a relative p is the
// workspace's (s itself); an absolute one is below one of s.Outputs ("/output/x.txt" is
// "x.txt" of /output's copy). ok is false for an absolute path below no output, or one
// that is an output's root: the snapshot vouches for nothing there. A glob pattern
// resolves by its literal leading segments.
func (s *Snapshot) Resolve(p string) (_ *Snapshot, rel string, ok bool) {
	if !strings.HasPrefix(p, "/") {
		return s, p, true
	}
	c := path.Clean(p)
	for _, o := range s.Outputs {
		if rest, found := strings.CutPrefix(c, o.Path+"/"); found && o.Snapshot != nil {
			return o.Snapshot, rest, true
		}
	}
	return nil, "", false
}
