package idmap

import (
	"strings"
	"testing"
)

func TestParseIsStrict(t *testing.T) {
	got, err := Parse(strings.NewReader("         0          0 4294967295\n  2000 3456 2\n"))
	if err != nil || len(got) != 2 || got[0].Size != 4294967295 || got[1].HostID != 3456 || got[1].ContainerID != 2000 {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"0 0\n", "a b c\n", "0 0 4294967296\n", "1 2 3 4\n"} {
		if _, err := Parse(strings.NewReader(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
