package task

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"ceval.dev/ceval/internal/lazyregexp"
)

// PackageImageRepo is where the images tasks get from sandbox.packages are named:
// PackageImageRepo:HASH of the request.
const PackageImageRepo = "ceval.local/packages"

// MaxPackages bounds sandbox.packages and sandbox.pip.
const MaxPackages = 256

var (
	// A Debian package name, optionally =VERSION; nothing that could pass for an option.
	debPackagePattern = lazyregexp.New(`^[a-z0-9][a-z0-9+.-]+(=[A-Za-z0-9.+~:-]+)?$`)
	// A pinned pip requirement, NAME==VERSION, optionally followed by --hash=sha256:HEX.
	pipPinPattern  = lazyregexp.New(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?(\[[A-Za-z0-9._,-]+\])?==[A-Za-z0-9.+!_-]+$`)
	pipHashPattern = lazyregexp.New(`^--hash=sha256:[0-9a-f]{64}$`)
)

// PackageImage is the image a task with sandbox.packages or sandbox.pip gets (built once
// by ceval and cached), "" when it asks for none. The name depends only on the request, so
// plan and validate can show it; the image's config records the resolved inputs.
func (s Sandbox) PackageImage() string {
	if len(s.Packages) == 0 && len(s.Pip) == 0 {
		return ""
	}
	pkgs := slices.Clone(s.Packages)
	slices.Sort(pkgs)
	h := sha256.New()
	fmt.Fprintf(h, "packages %s\npip %s\nwheels %s\n", strings.Join(slices.Compact(pkgs), ","), strings.Join(s.Pip, "\n"), s.PipFindLinks.path())
	return PackageImageRepo + ":" + hex.EncodeToString(h.Sum(nil))[:16]
}

// packages reads sandbox.packages, sandbox.pip and sandbox.pip_find_links (given as nodes,
// nil when absent) and, unless the task named sandbox.image, points the image at the
// package image.
func (l *loader) packages(sb *Sandbox, pkgs, pip, links *yaml.Node, imageGiven bool) {
	l.packageRequest("sandbox", sb, pkgs, pip, links)
	if !imageGiven {
		if name := sb.PackageImage(); name != "" {
			sb.Image = name
		}
	}
}

// packageRequest reads WHAT.packages, WHAT.pip and WHAT.pip_find_links (nodes, nil when
// absent) into sb's Packages, Pip and PipFindLinks.
func (l *loader) packageRequest(what string, sb *Sandbox, pkgs, pip, links *yaml.Node) {
	if pkgs != nil {
		l.strings(pkgs, what+".packages", &sb.Packages)
		l.checkEach(pkgs, what+".packages", sb.Packages, func(p string) string {
			if !debPackagePattern.MatchString(p) {
				return fmt.Sprintf("%q is not a Debian package name (lowercase letters, digits, '+', '-', '.'; optionally =VERSION)", p)
			}
			return ""
		})
	}
	if pip != nil {
		l.strings(pip, what+".pip", &sb.Pip)
		l.checkEach(pip, what+".pip", sb.Pip, func(line string) string {
			f := strings.Fields(line)
			if len(f) == 0 || !pipPinPattern.MatchString(f[0]) {
				return fmt.Sprintf("%q is not a pinned requirement: write NAME==VERSION (optionally followed by --hash=sha256:HEX)", line)
			}
			for _, x := range f[1:] {
				if !pipHashPattern.MatchString(x) {
					return fmt.Sprintf("%q: %q is not --hash=sha256:HEX (64 lowercase hex digits)", line, x)
				}
			}
			return ""
		})
		if links == nil && len(sb.Pip) > 0 {
			l.errorf(resolve(pip), "%s.pip needs %s.pip_find_links, a directory of wheels beside the task: ceval installs them at build time with --no-index and never asks a package index", what, what)
		}
	}
	if links != nil {
		sb.PipFindLinks = l.openDir(links, what+".pip_find_links")
		if pip == nil {
			l.errorf(resolve(links), "%s.pip_find_links is set but %s.pip is not", what, what)
		}
	}
}

// checkEach reports each bad item of a string list at its own line, and a list too long.
func (l *loader) checkEach(n *yaml.Node, what string, items []string, bad func(string) string) {
	rn := resolve(n)
	if len(items) > MaxPackages {
		l.errorf(rn, "%s has %d entries, at most %d", what, len(items), MaxPackages)
		return
	}
	for i, it := range items {
		at := rn
		if rn.Kind == yaml.SequenceNode && i < len(rn.Content) {
			at = rn.Content[i]
		}
		if msg := bad(it); msg != "" {
			l.errorf(at, "%s[%d]: %s", what, i, msg)
		}
	}
}
