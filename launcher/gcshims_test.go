package launcher

import (
	"strings"
	"testing"
)

func TestParseShimReadsOnlyALongRunningShim(t *testing.T) {
	for _, c := range []struct {
		argv            string
		ok              bool
		ns, id, address string
	}{
		{"/usr/bin/containerd-shim-runc-v2 -namespace ceval -id ceval-verify-1 -address /run/c.sock", true, "ceval", "ceval-verify-1", "/run/c.sock"},
		{"containerd-shim-runc-v2 -namespace=n -id=ceval-x -address=/s -debug", true, "n", "ceval-x", "/s"},
		{"containerd-shim-runc-v2 -namespace n -address /s -publish-binary /usr/bin/containerd -id ceval-x start", false, "", "", ""},
		{"containerd-shim-runc-v2 -namespace n -id ceval-x -address /s delete", false, "", "", ""},
		{"/usr/bin/sleep -namespace n -id ceval-x -address /s", false, "", "", ""},
		{"containerd-shim-runc-v2 -namespace n -id ceval-x", false, "", "", ""},
	} {
		s, ok := parseShim([]byte(strings.ReplaceAll(c.argv, " ", "\x00") + "\x00"))
		if ok != c.ok || ok && (s.ns != c.ns || s.id != c.id || s.address != c.address) {
			t.Errorf("%q: %+v %v", c.argv, s, ok)
		}
	}
}
