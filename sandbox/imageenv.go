package sandbox

import (
	"slices"
	"strings"
)

// imageEnvDenied says why the image's ENV may not set key, or "": ceval's own variables and
// what would divert its channels or the user's credentials (an image from a public suite is
// no party to those). Everything ceval sets itself wins anyway (MergeImageEnv).
func imageEnvDenied(key string) string {
	up := strings.ToUpper(key)
	switch {
	case key == "HOME" || key == "USER" || key == "PWD" || key == "HOSTNAME":
		return "ceval's own"
	case strings.HasPrefix(up, "CEVAL_"):
		return "ceval's own"
	case key == "LD_PRELOAD" || key == "LD_AUDIT":
		return "would load code into every process ceval starts there"
	case strings.HasSuffix(up, "_PROXY"):
		return "would route the container's connections (the model gateway's included) through a proxy"
	case strings.HasPrefix(up, "ANTHROPIC_") || strings.HasPrefix(up, "OPENAI_") || strings.HasPrefix(up, "CLAUDE_") || strings.HasPrefix(up, "CODEX_"):
		return "a model provider's setting: could send the agent's calls, and a passed-through key, elsewhere"
	}
	return ""
}

// ImageEnv is an image config's Env as ceval applies it: each KEY=VALUE once (the last
// wins, as in Docker), malformed and denied entries dropped with the reason, and, when the
// image's working directory was copied into the workspace, every colon-separated value
// element that names it or a path below it moved to /workspace (PATH=/app/bin:$PATH reaches
// the files where the agent has them).
func ImageEnv(env []string, workdir string) (kept []string, dropped []string) {
	idx := map[string]int{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsRune(kv, 0) || !envKey(k) {
			dropped = append(dropped, quoteKey(kv)+": not KEY=VALUE")
			continue
		}
		if why := imageEnvDenied(k); why != "" {
			if why != "ceval's own" {
				dropped = append(dropped, k+": "+why)
			}
			continue
		}
		if workdir != "" && workdir != "/" {
			parts := strings.Split(v, ":")
			for i, p := range parts {
				if p == workdir || strings.HasPrefix(p, workdir+"/") {
					parts[i] = "/workspace" + strings.TrimPrefix(p, workdir)
				}
			}
			v = strings.Join(parts, ":")
		}
		if i, ok := idx[k]; ok {
			kept[i] = k + "=" + v
			continue
		}
		idx[k] = len(kept)
		kept = append(kept, k+"="+v)
	}
	return kept, dropped
}

// MergeImageEnv puts the image's variables under ceval's own: a key own sets is ceval's.
func MergeImageEnv(image, own []string) []string {
	set := map[string]bool{}
	for _, kv := range own {
		k, _, _ := strings.Cut(kv, "=")
		set[k] = true
	}
	var out []string
	for _, kv := range image {
		if k, _, _ := strings.Cut(kv, "="); !set[k] {
			out = append(out, kv)
		}
	}
	return append(out, own...)
}

// PrependImageEnv puts each KEY=VALUE of pre before the image's value of KEY (colon-joined),
// or sets it when the image has none.
func PrependImageEnv(image, pre []string) []string {
	out := slices.Clone(image)
	for _, kv := range pre {
		k, v, _ := strings.Cut(kv, "=")
		i := slices.IndexFunc(out, func(e string) bool { return strings.HasPrefix(e, k+"=") })
		switch {
		case i < 0:
			out = append(out, kv)
		case out[i] == k+"=":
			out[i] = kv
		default:
			out[i] = k + "=" + v + ":" + strings.TrimPrefix(out[i], k+"=")
		}
	}
	return out
}

func envKey(k string) bool {
	for i, c := range k {
		if !(c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

func quoteKey(kv string) string {
	if len(kv) > 40 {
		kv = kv[:40] + "..."
	}
	return strings.ToValidUTF8(strings.ReplaceAll(kv, "\x00", `\0`), "?")
}
