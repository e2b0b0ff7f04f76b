package images

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"
)

// rootfsResult is what normalizeRootfs removed and read on the way.
type rootfsResult struct {
	// Neutralised are the setuid/setgid bits and file capabilities that were removed.
	Neutralised []Finding
	// Versions is /usr/share/ceval/packages.txt, the installed package=version lines.
	Versions []byte
}

// versionsFile is where the customize script leaves the installed versions.
const versionsFile = "usr/share/ceval/packages.txt"

// normalizeRootfs copies a rootfs tar (mmdebstrap's, in its order: sorted by name) to w as
// an image layer an agent can run on without privileges and that the same input always
// writes the same bytes of:
//   - setuid and setgid bits of files are cleared and file capabilities (and every other
//     extended attribute) dropped: with them gone no file in the image can raise a
//     privilege, whatever no_new_privs does;
//   - device nodes and FIFOs are dropped (the runtime mounts its own /dev);
//   - names are relative and clean; an entry whose name or link leaves the root is refused;
//   - mtimes are clamped to PackageEpoch, access and change times, owner names and
//     device numbers cleared; the PAX format is always used.
func normalizeRootfs(r io.Reader, w io.Writer) (rootfsResult, error) {
	var res rootfsResult
	epochTime := time.Unix(PackageEpoch, 0).UTC()
	tr := tar.NewReader(r)
	tw := tar.NewWriter(w)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return res, fmt.Errorf("read rootfs tar: %w", err)
		}
		name, ok := layerName(hdr.Name)
		if !ok {
			return res, fmt.Errorf("rootfs entry %q leaves the root", hdr.Name)
		}
		if name == "" {
			continue // the root directory itself
		}
		out := tar.Header{
			Name:     name,
			Mode:     hdr.Mode & 0o7777,
			Uid:      hdr.Uid,
			Gid:      hdr.Gid,
			Size:     0,
			ModTime:  hdr.ModTime.UTC().Truncate(time.Second),
			Typeflag: hdr.Typeflag,
			Format:   tar.FormatPAX,
		}
		if out.ModTime.After(epochTime) {
			out.ModTime = epochTime
		}
		owner := fmt.Sprintf("%d:%d", hdr.Uid, hdr.Gid)
		mode := fmt.Sprintf("%04o", out.Mode)
		p := "/" + name
		switch hdr.Typeflag {
		case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
			continue
		case tar.TypeDir:
			out.Name += "/"
		case tar.TypeSymlink:
			out.Linkname = hdr.Linkname
		case tar.TypeLink:
			target, ok := layerName(hdr.Linkname)
			if !ok || target == "" {
				return res, fmt.Errorf("rootfs hard link %q -> %q leaves the root", hdr.Name, hdr.Linkname)
			}
			out.Linkname = target
		case tar.TypeReg, tar.TypeRegA:
			out.Typeflag = tar.TypeReg
			out.Size = hdr.Size
		default:
			return res, fmt.Errorf("rootfs entry %q has unsupported type %q", hdr.Name, hdr.Typeflag)
		}
		if hdr.Typeflag != tar.TypeDir {
			if out.Mode&0o4000 != 0 {
				res.Neutralised = append(res.Neutralised, Finding{Path: p, Kind: KindSetuid, Mode: mode, Owner: owner})
			}
			if out.Mode&0o2000 != 0 {
				res.Neutralised = append(res.Neutralised, Finding{Path: p, Kind: KindSetgid, Mode: mode, Owner: owner})
			}
			out.Mode &^= 0o6000
		}
		if _, ok := hdr.PAXRecords[capabilityXattr]; ok {
			res.Neutralised = append(res.Neutralised, Finding{Path: p, Kind: KindCapability, Mode: mode, Owner: owner})
		}
		if err := tw.WriteHeader(&out); err != nil {
			return res, fmt.Errorf("write layer entry %s: %w", name, err)
		}
		if out.Typeflag != tar.TypeReg {
			continue
		}
		var dst io.Writer = tw
		var keep strings.Builder
		if name == versionsFile && hdr.Size <= maxWatchedFile {
			dst = io.MultiWriter(tw, &keep)
		}
		if _, err := io.Copy(dst, tr); err != nil {
			return res, fmt.Errorf("copy layer entry %s: %w", name, err)
		}
		if keep.Len() > 0 {
			res.Versions = []byte(keep.String())
		}
	}
	sort.Slice(res.Neutralised, func(i, j int) bool {
		a, b := res.Neutralised[i], res.Neutralised[j]
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Kind < b.Kind
	})
	return res, tw.Close()
}

// layerName is hdr.Name relative to the root ("" for the root itself); false when it
// leaves it.
func layerName(n string) (string, bool) {
	if strings.HasPrefix(n, "/") {
		n = "." + n
	}
	c := path.Clean(n)
	if c == "." {
		return "", true
	}
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", false
	}
	return c, true
}
