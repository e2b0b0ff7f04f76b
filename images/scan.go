package images

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
)

// Kinds of dangerous file a preflight looks for: each would let the agent regain a
// privilege that the runtime spec took away (no_new_privs blocks most, but ceval does not
// rely on one layer of defence).
const (
	KindSetuid     = "setuid"
	KindSetgid     = "setgid"
	KindCapability = "file-capability"
)

// capabilityXattr is the PAX record under which tar carries a file's capabilities.
const capabilityXattr = "SCHILY.xattr.security.capability"

// Finding is one dangerous file in an image's merged filesystem.
type Finding struct {
	Path  string `json:"path"`
	Kind  string `json:"kind"`
	Mode  string `json:"mode"`
	Owner string `json:"owner"`
	// Layer is the index (from 0, bottom first) of the layer that holds the file.
	Layer int `json:"layer"`
}

func (f Finding) String() string {
	return fmt.Sprintf("%s (%s, mode %s, owner %s, layer %d)", f.Path, f.Kind, f.Mode, f.Owner, f.Layer)
}

// watchedFiles are read whole from the layers; anything bigger is not a passwd file ceval
// should trust.
var watchedFiles = map[string]bool{"/etc/passwd": true, "/etc/group": true}

const maxWatchedFile = 1 << 20

// dirInfo is what the scan keeps of a directory: enough to say whether the agent's home
// exists and who owns it.
type dirInfo struct {
	uid, gid int
	mode     int64
}

// fsView is the part of a merged image filesystem a preflight needs. Layers are added
// bottom first; whiteouts and replacements in a layer act only on the layers below it.
type fsView struct {
	findings map[string][]Finding
	files    map[string][]byte
	dirs     map[string]dirInfo
	layers   int
}

func newFSView() *fsView {
	return &fsView{findings: map[string][]Finding{}, files: map[string][]byte{}, dirs: map[string]dirInfo{}}
}

// addLayer reads one uncompressed layer tar and merges it over the layers added before.
func (v *fsView) addLayer(r io.Reader) error {
	layer := v.layers
	v.layers++
	up := newFSView()
	links := map[string]string{} // hard link path -> target, resolved after the layer
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("layer %d: %w", layer, err)
		}
		p := path.Clean("/" + hdr.Name)
		dir, base := path.Split(p)
		dir = path.Clean(dir)
		if base == ".wh..wh..opq" {
			v.removeChildren(dir)
			continue
		}
		if strings.HasPrefix(base, ".wh..wh.") {
			continue // other aufs metadata
		}
		if strings.HasPrefix(base, ".wh.") {
			gone := path.Join(dir, strings.TrimPrefix(base, ".wh."))
			v.remove(gone)
			v.removeChildren(gone)
			continue
		}
		// An entry replaces whatever the lower layers (or an earlier entry of this one) had
		// at its path; a non-directory also hides everything the lower layers had below it.
		v.remove(p)
		up.remove(p)
		delete(links, p)
		if hdr.Typeflag != tar.TypeDir {
			v.removeChildren(p)
		}
		owner := fmt.Sprintf("%d:%d", hdr.Uid, hdr.Gid)
		mode := fmt.Sprintf("%04o", hdr.Mode&0o7777)
		switch hdr.Typeflag {
		case tar.TypeDir:
			up.dirs[p] = dirInfo{uid: hdr.Uid, gid: hdr.Gid, mode: hdr.Mode}
		case tar.TypeReg, tar.TypeLink:
			if hdr.Mode&0o4000 != 0 {
				up.findings[p] = append(up.findings[p], Finding{Path: p, Kind: KindSetuid, Mode: mode, Owner: owner, Layer: layer})
			}
			if hdr.Mode&0o2000 != 0 {
				up.findings[p] = append(up.findings[p], Finding{Path: p, Kind: KindSetgid, Mode: mode, Owner: owner, Layer: layer})
			}
			if hdr.Typeflag == tar.TypeLink {
				links[p] = path.Clean("/" + hdr.Linkname)
			} else if watchedFiles[p] {
				if hdr.Size > maxWatchedFile {
					return fmt.Errorf("layer %d: %s is %d bytes, more than %d", layer, p, hdr.Size, maxWatchedFile)
				}
				b, err := io.ReadAll(tr)
				if err != nil {
					return fmt.Errorf("layer %d: read %s: %w", layer, p, err)
				}
				up.files[p] = b
			}
		}
		if _, ok := hdr.PAXRecords[capabilityXattr]; ok {
			up.findings[p] = append(up.findings[p], Finding{Path: p, Kind: KindCapability, Mode: mode, Owner: owner, Layer: layer})
		}
	}
	// A hard link shares its target's inode: its mode bits and capabilities too.
	for p, target := range links {
		for _, f := range up.findings[target] {
			if !hasKind(up.findings[p], f.Kind) {
				f.Path = p
				up.findings[p] = append(up.findings[p], f)
			}
		}
		if b, ok := up.files[target]; ok && watchedFiles[p] {
			up.files[p] = b
		}
	}
	for p, f := range up.findings {
		v.findings[p] = f
	}
	for p, b := range up.files {
		v.files[p] = b
	}
	for p, d := range up.dirs {
		v.dirs[p] = d
	}
	return nil
}

func hasKind(fs []Finding, kind string) bool {
	for _, f := range fs {
		if f.Kind == kind {
			return true
		}
	}
	return false
}

func (v *fsView) remove(p string) {
	delete(v.findings, p)
	delete(v.files, p)
	delete(v.dirs, p)
}

func (v *fsView) removeChildren(dir string) {
	prefix := strings.TrimSuffix(dir, "/") + "/"
	for p := range v.findings {
		if strings.HasPrefix(p, prefix) {
			delete(v.findings, p)
		}
	}
	for p := range v.files {
		if strings.HasPrefix(p, prefix) {
			delete(v.files, p)
		}
	}
	for p := range v.dirs {
		if strings.HasPrefix(p, prefix) {
			delete(v.dirs, p)
		}
	}
}

// sortedFindings lists every finding, by path then kind.
func (v *fsView) sortedFindings() []Finding {
	var out []Finding
	for _, fs := range v.findings {
		out = append(out, fs...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Kind < out[j].Kind
	})
	return out
}
