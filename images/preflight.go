package images

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"ceval.dev/ceval/policy"
	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/pkg/archive/compression"
	"github.com/moby/sys/user"
	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// ErrNotRunnable is what Report.Runnable's errors wrap.
var ErrNotRunnable = errors.New("image not runnable")

// Report is the result of preflighting one image: what a run needs to know before it puts
// an agent in it. It depends only on the image's manifest digest, so it is cached by it.
type Report struct {
	Image Image `json:"image"`
	// Label is the value of IsolationLabel in the image config ("" when absent).
	Label string `json:"label"`
	// Dangerous lists setuid/setgid files and files with capabilities in the merged
	// filesystem (whited-out files excluded).
	Dangerous []Finding `json:"dangerous"`
	// AgentUser is the name /etc/passwd gives UID 2000 ("" when it has no entry).
	AgentUser string `json:"agent_user,omitempty"`
	// AgentHome is that entry's home directory; AgentHomeOwner is "uid:gid" when the
	// directory exists in the image, "" when it does not.
	AgentHome      string `json:"agent_home,omitempty"`
	AgentHomeOwner string `json:"agent_home_owner,omitempty"`
	// PasswdProblem says why /etc/passwd could not be used ("" when it was read).
	PasswdProblem string `json:"passwd_problem,omitempty"`
	Layers        int    `json:"layers"`
	// Cached is true when this report came from the cache rather than a scan.
	Cached bool `json:"cached"`
}

// Labeled reports whether the image carries IsolationLabel with the value this version
// accepts.
func (r *Report) Labeled() bool { return r.Label == IsolationLabelValue }

// Runnable returns nil when a run may use the image: it is labeled and holds no
// setuid/setgid file and no file capability. Otherwise its error (wrapping ErrNotRunnable)
// says what is wrong and the command that fixes it.
func (r *Report) Runnable() error {
	name := r.Image.Name
	if len(r.Dangerous) > 0 {
		return fmt.Errorf("%w: image %s holds %d setuid/setgid or file-capability file(s): %s; remove them from the image (chmod u-s,g-s FILE; setcap -r FILE) and import it again, or use the default image: ceval images build-default",
			ErrNotRunnable, name, len(r.Dangerous), summarize(r.Dangerous, 5))
	}
	if !r.Labeled() {
		got := "it has none"
		if r.Label != "" {
			got = fmt.Sprintf("it has %q", r.Label)
		}
		return fmt.Errorf("%w: image %s lacks the label %s=%s (%s), so ceval will not run an agent in it; check it with: ceval images check %s, then mark it with: ceval images label %s (or use the default image: ceval images build-default)",
			ErrNotRunnable, name, IsolationLabel, IsolationLabelValue, got, name, name)
	}
	return nil
}

// RunnableImage is Runnable for img as a run resolved it, except that an image ceval pulled
// (its record says SourcePulled) needs no isolation label: its pull ran the preflight
// `ceval images label` runs, and labeling would change the digest a run is pinned to.
func (r *Report) RunnableImage(img Image) error {
	err := r.Runnable()
	if err != nil && len(r.Dangerous) == 0 && img.Source == SourcePulled {
		return nil
	}
	return err
}

func summarize(fs []Finding, n int) string {
	var parts []string
	for i, f := range fs {
		if i == n {
			parts = append(parts, fmt.Sprintf("and %d more", len(fs)-n))
			break
		}
		parts = append(parts, f.Path+" ("+f.Kind+")")
	}
	return strings.Join(parts, ", ")
}

// Check is one line of a preflight report.
type Check struct {
	Name string `json:"name"`
	// Status is "ok", "FAIL" (the image is not runnable) or "warn" (runnable, but agents
	// may trip over it).
	Status string `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Checks lists the report as one check per property, in a fixed order.
func (r *Report) Checks() []Check {
	name := r.Image.Name
	var cs []Check
	label := Check{Name: "isolation label", Status: "ok", Detail: IsolationLabel + "=" + IsolationLabelValue}
	if !r.Labeled() {
		label.Status = "FAIL"
		label.Detail = IsolationLabel + " missing"
		if r.Label != "" {
			label.Detail = fmt.Sprintf("%s=%q, want %q", IsolationLabel, r.Label, IsolationLabelValue)
		}
		label.Fix = "once the other checks pass: ceval images label " + name
	}
	cs = append(cs, label)

	var suid, caps []Finding
	for _, f := range r.Dangerous {
		if f.Kind == KindCapability {
			caps = append(caps, f)
		} else {
			suid = append(suid, f)
		}
	}
	cs = append(cs, findingCheck("setuid/setgid files", suid, "remove the bits (chmod u-s,g-s FILE) in the image and import it again"))
	cs = append(cs, findingCheck("file capabilities", caps, "remove them (setcap -r FILE) in the image and import it again"))

	passwd := Check{Name: "agent user", Status: "ok", Detail: fmt.Sprintf("uid %d is %q in /etc/passwd", policy.AgentUID, r.AgentUser)}
	fixPasswd := fmt.Sprintf("add agent:x:%d:%d::/home/agent:/bin/sh to the image's /etc/passwd (whoami, git and ssh look the user up)", policy.AgentUID, policy.AgentGID)
	switch {
	case r.PasswdProblem != "":
		passwd.Status, passwd.Detail, passwd.Fix = "warn", r.PasswdProblem, fixPasswd
	case r.AgentUser == "":
		passwd.Status, passwd.Detail, passwd.Fix = "warn", fmt.Sprintf("no /etc/passwd entry for uid %d", policy.AgentUID), fixPasswd
	}
	cs = append(cs, passwd)

	if r.AgentUser != "" {
		home := Check{Name: "agent home", Status: "ok", Detail: fmt.Sprintf("%s exists, owner %s", r.AgentHome, r.AgentHomeOwner)}
		if r.AgentHomeOwner == "" {
			home.Status, home.Detail = "warn", r.AgentHome+" does not exist in the image"
			home.Fix = fmt.Sprintf("create %s owned by %d:%d in the image (a run mounts a fresh one there)", r.AgentHome, policy.AgentUID, policy.AgentGID)
		}
		cs = append(cs, home)
	}
	return cs
}

func findingCheck(name string, fs []Finding, fix string) Check {
	if len(fs) == 0 {
		return Check{Name: name, Status: "ok", Detail: "none"}
	}
	var ss []string
	for _, f := range fs {
		ss = append(ss, f.String())
	}
	return Check{Name: name, Status: "FAIL", Detail: strings.Join(ss, "; "), Fix: fix}
}

// scan reads every layer of a resolved image and builds its report.
func scan(ctx context.Context, cs content.Provider, r *resolved) (*Report, error) {
	v := newFSView()
	for i, l := range r.layers() {
		if err := scanLayer(ctx, cs, l, v); err != nil {
			return nil, fmt.Errorf("preflight %s: layer %d (%s): %w", r.image.Name, i, l.Digest, err)
		}
	}
	return reportFor(r.image, r.config, v), nil
}

func scanLayer(ctx context.Context, cs content.Provider, l ocispec.Descriptor, v *fsView) error {
	ra, err := cs.ReaderAt(ctx, l)
	if err != nil {
		return err
	}
	defer ra.Close()
	// Each read of a remote content store is one gRPC stream: read big chunks.
	ds, err := compression.DecompressStream(bufio.NewReaderSize(content.NewReader(ra), 1<<20))
	if err != nil {
		return err
	}
	defer ds.Close()
	return v.addLayer(ds)
}

// reportFor turns a scanned filesystem view and the image config into a report.
func reportFor(img Image, config ocispec.Image, v *fsView) *Report {
	rep := &Report{Image: img, Label: config.Config.Labels[IsolationLabel], Dangerous: v.sortedFindings(), Layers: v.layers}
	if rep.Dangerous == nil {
		rep.Dangerous = []Finding{}
	}
	pw, ok := v.files["/etc/passwd"]
	if !ok {
		rep.PasswdProblem = "the image has no /etc/passwd"
		return rep
	}
	users, err := user.ParsePasswdFilter(bytes.NewReader(pw), func(u user.User) bool { return u.Uid == policy.AgentUID })
	if err != nil {
		rep.PasswdProblem = "cannot parse /etc/passwd: " + err.Error()
		return rep
	}
	if len(users) == 0 {
		return rep
	}
	rep.AgentUser, rep.AgentHome = users[0].Name, filepath.Clean("/"+users[0].Home)
	if d, ok := v.dirs[rep.AgentHome]; ok {
		rep.AgentHomeOwner = fmt.Sprintf("%d:%d", d.uid, d.gid)
	}
	return rep
}

// PreflightCache remembers reports by manifest digest, in memory and (when it has a
// directory) on disk, so a run never rescans an image already checked.
type PreflightCache struct {
	dir   string
	mu    sync.Mutex
	mem   map[digest.Digest]Report
	scans atomic.Int64 // how many images were scanned, for tests
}

// cacheFormat changes whenever Report or the scan changes meaning; older files are ignored.
const cacheFormat = "ceval-preflight-v1"

type cacheFile struct {
	Format string `json:"format"`
	Report Report `json:"report"`
}

// NewPreflightCache returns a cache backed by dir (created 0700 if missing), or a memory
// only cache when dir is "". It refuses a directory that someone else owns or can write:
// whoever can write a cache entry can make ceval run an agent in an unchecked image.
func NewPreflightCache(dir string) (*PreflightCache, error) {
	pc := &PreflightCache{dir: dir, mem: map[digest.Digest]Report{}}
	if dir == "" {
		return pc, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("preflight cache: %w", err)
	}
	if err := checkPrivate(dir, true); err != nil {
		return nil, fmt.Errorf("preflight cache: %w", err)
	}
	return pc, nil
}

// checkPrivate refuses a path not owned by us or writable by group or others.
func checkPrivate(p string, dir bool) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case dir && !fi.IsDir(), !dir && !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a plain %s", p, map[bool]string{true: "directory", false: "file"}[dir])
	case !ok || int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s is not owned by uid %d; remove it or chown it", p, os.Geteuid())
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s is writable by group or others (mode %04o); fix it with: chmod go-w %s", p, fi.Mode().Perm(), p)
	}
	return nil
}

// DefaultCacheDir is $XDG_CACHE_HOME/ceval/preflight, else ~/.cache/ceval/preflight.
func DefaultCacheDir() (string, error) {
	if x := os.Getenv("XDG_CACHE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "ceval", "preflight"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("preflight cache: %w", err)
	}
	return filepath.Join(home, ".cache", "ceval", "preflight"), nil
}

var (
	defaultCacheOnce sync.Once
	defaultCache     *PreflightCache
	defaultCacheErr  error
)

// Preflight reports on image ref in ctx's namespace, using the process-wide cache under
// DefaultCacheDir. A cold preflight reads and decompresses every layer; a cached one reads
// only the image record and manifest.
func Preflight(ctx context.Context, c *client.Client, ref string) (*Report, error) {
	defaultCacheOnce.Do(func() {
		dir, err := DefaultCacheDir()
		if err != nil {
			dir = "" // no home: keep the cache in memory only
		}
		defaultCache, defaultCacheErr = NewPreflightCache(dir)
	})
	if defaultCacheErr != nil {
		return nil, defaultCacheErr
	}
	return defaultCache.Preflight(ctx, c, ref)
}

// Preflight reports on image ref, scanning it only when no report for its manifest digest
// is cached.
func (pc *PreflightCache) Preflight(ctx context.Context, c *client.Client, ref string) (*Report, error) {
	rec, err := getRecord(ctx, c, ref)
	if err != nil {
		return nil, err
	}
	r, err := resolve(ctx, c.ContentStore(), rec)
	if err != nil {
		return nil, err
	}
	if rep, ok := pc.get(r.image.ManifestDigest); ok {
		rep.Image = r.image
		rep.Cached = true
		return &rep, nil
	}
	rep, err := scan(ctx, c.ContentStore(), r)
	if err != nil {
		return nil, err
	}
	pc.scans.Add(1)
	if err := pc.put(*rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// PreflightOf reports on img, as EnsureDefault or Lookup resolved it just now: a report
// cached for its manifest digest is returned without asking containerd again (the digest
// names the manifest's content, so a changed image cannot be served a stale report); else
// it is Preflight of img.Name.
func (pc *PreflightCache) PreflightOf(ctx context.Context, c *client.Client, img Image) (*Report, error) {
	if rep, ok := pc.get(img.ManifestDigest); ok {
		rep.Image = img
		rep.Cached = true
		return &rep, nil
	}
	return pc.Preflight(ctx, c, img.Name)
}

func (pc *PreflightCache) file(d digest.Digest) string {
	return filepath.Join(pc.dir, d.Algorithm().String()+"-"+d.Encoded()+".json")
}

func (pc *PreflightCache) get(d digest.Digest) (Report, bool) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if rep, ok := pc.mem[d]; ok {
		return rep, true
	}
	if pc.dir == "" || d.Validate() != nil {
		return Report{}, false
	}
	f := pc.file(d)
	if checkPrivate(f, false) != nil {
		return Report{}, false
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return Report{}, false
	}
	var cf cacheFile
	if json.Unmarshal(b, &cf) != nil || cf.Format != cacheFormat || cf.Report.Image.ManifestDigest != d {
		return Report{}, false
	}
	pc.mem[d] = cf.Report
	return cf.Report, true
}

func (pc *PreflightCache) put(rep Report) error {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	d := rep.Image.ManifestDigest
	pc.mem[d] = rep
	if pc.dir == "" {
		return nil
	}
	b, err := json.Marshal(cacheFile{Format: cacheFormat, Report: rep})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(pc.dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("preflight cache: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("preflight cache: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("preflight cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), pc.file(d)); err != nil {
		return fmt.Errorf("preflight cache: %w", err)
	}
	return nil
}
