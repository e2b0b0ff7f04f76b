package gateway

import (
	"bytes"
	"encoding/json"
	"strings"
)

// redacted replaces a credential in whatever the gateway returns or records.
const redacted = "[REDACTED]"

// secrets are the credentials the gateway adds to upstream requests (each provider's key,
// also as JSON would escape it), longest first so a key holding another is replaced whole.
func secretsOf(providers map[string]Provider) [][]byte {
	var out [][]byte
	seen := map[string]bool{}
	for _, p := range providers {
		if p.Key == "" {
			continue
		}
		esc, _ := json.Marshal(p.Key)
		for _, s := range []string{p.Key, string(esc[1 : len(esc)-1])} {
			if !seen[s] {
				seen[s] = true
				out = append(out, []byte(s))
			}
		}
	}
	for i := 1; i < len(out); i++ { // few keys: insertion sort, longest first
		for j := i; j > 0 && len(out[j]) > len(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// redactString replaces every secret in s.
func redactString(secrets [][]byte, s string) string {
	for _, k := range secrets {
		s = strings.ReplaceAll(s, string(k), redacted)
	}
	return s
}

// redactor replaces secrets in a stream that may split one across writes. It holds back
// only a tail that could begin a secret, so an answer's events are never delayed otherwise.
type redactor struct {
	secrets [][]byte
	pending []byte
}

// next returns what of p (after what was held) can be passed on; final passes on the rest.
func (r *redactor) next(p []byte, final bool) []byte {
	if len(r.secrets) == 0 {
		return p
	}
	buf := append(r.pending, p...)
	r.pending = nil
	var out []byte
	i := 0
	for {
		hold := len(buf) // where a secret that may go on in the next write begins
		if !final {
			for j := max(i, len(buf)-len(r.secrets[0])+1); j < len(buf); j++ { // secrets[0] is the longest
				if r.beginsSecret(buf[j:]) {
					hold = j
					break
				}
			}
		}
		at, n := -1, 0
		for _, k := range r.secrets {
			if j := bytes.Index(buf[i:], k); j >= 0 && i+j < hold && (at < 0 || j < at) {
				at, n = j, len(k)
			}
		}
		if at < 0 {
			out = append(out, buf[i:hold]...)
			r.pending = append([]byte(nil), buf[hold:]...)
			return out
		}
		out = append(append(out, buf[i:i+at]...), redacted...)
		i += at + n
	}
}

// beginsSecret says whether tail is the start of a secret (not a whole one).
func (r *redactor) beginsSecret(tail []byte) bool {
	for _, k := range r.secrets {
		if len(tail) < len(k) && bytes.HasPrefix(k, tail) {
			return true
		}
	}
	return false
}

// redactLine replaces every secret in a transcript line.
func redactLine(secrets [][]byte, line []byte) []byte {
	for _, k := range secrets {
		line = bytes.ReplaceAll(line, k, []byte(redacted))
	}
	return line
}
