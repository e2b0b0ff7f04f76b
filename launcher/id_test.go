package launcher

import (
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/pkg/identifiers"
)

func TestContainerIDIsValidForContainerdWhateverTheTaskAndVariantIDs(t *testing.T) {
	run := "20261201T234822.123Z-a9d9d4"
	for _, tc := range []struct {
		name, in string
		kept     bool // the ID is ContainerIDPrefix+in, unchanged
	}{
		{"a short valid id is kept", run + "-default-hello-0", true},
		{"an underscore task id under the default variant (issue 40)", run + "-default-agda_sized_types_termination_hard-0", false},
		{"a cut that lands on an underscore", run + "-default-agda_sized_types_termination_hard-0-verify", false},
		{"a long variant and task id", run + "-" + strings.Repeat("variant-x", 6) + "-" + strings.Repeat("task_id_", 8) + "-3", false},
		{"doubled separators", "a__b", false},
		{"a trailing separator", "a_", false},
		{"a colon and a slash", "img:latest/x", false},
		{"non-ASCII", "tâche-é", false},
		{"only separators", "._-", false},
		{"empty", "", false},
		{"exactly the longest kept", strings.Repeat("a", MaxContainerIDLen-len(ContainerIDPrefix)), true},
		{"one past the longest kept", strings.Repeat("a", MaxContainerIDLen-len(ContainerIDPrefix)+1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := ContainerID(tc.in)
			if err := identifiers.Validate(id); err != nil {
				t.Fatalf("ContainerID(%q) = %q: %v", tc.in, id, err)
			}
			if len(id) > MaxContainerIDLen || !strings.HasPrefix(id, ContainerIDPrefix) {
				t.Errorf("ContainerID(%q) = %q: want at most %d characters starting %q", tc.in, id, MaxContainerIDLen, ContainerIDPrefix)
			}
			if kept := id == ContainerIDPrefix+tc.in; kept != tc.kept {
				t.Errorf("ContainerID(%q) = %q: kept unchanged %v, want %v", tc.in, id, kept, tc.kept)
			}
		})
	}
}

func TestContainerIDsOfLongIDsSharingAPrefixDiffer(t *testing.T) {
	long := "20261201T234822.123Z-a9d9d4-default-" + strings.Repeat("agda_sized_types_", 4)
	pairs := [][2]string{
		{long + "-0", long + "-1"},
		{"a.b", "a-b"},
		{"a:b", "a-b"},
		{"a__b", "a_b"},
	}
	for _, p := range pairs {
		if a, b := ContainerID(p[0]), ContainerID(p[1]); a == b {
			t.Errorf("ContainerID(%q) = ContainerID(%q) = %q", p[0], p[1], a)
		}
	}
}

func FuzzContainerID(f *testing.F) {
	f.Add("20261201T234822.123Z-a9d9d4-default-agda_sized_types_termination_hard-0", "x")
	f.Add("a__b", "a_b")
	f.Add(strings.Repeat("task_id_", 10), strings.Repeat("task_id_", 10)+"x")
	f.Add("", "-")
	f.Fuzz(func(t *testing.T, a, b string) {
		ida := ContainerID(a)
		if err := identifiers.Validate(ida); err != nil {
			t.Fatalf("ContainerID(%q) = %q: %v", a, ida, err)
		}
		if len(ida) > MaxContainerIDLen || !strings.HasPrefix(ida, ContainerIDPrefix) {
			t.Fatalf("ContainerID(%q) = %q: want at most %d characters starting %q", a, ida, MaxContainerIDLen, ContainerIDPrefix)
		}
		if ContainerID(a) != ida {
			t.Fatalf("ContainerID(%q) is not deterministic", a)
		}
		if a != b && ida == ContainerID(b) {
			t.Fatalf("ContainerID(%q) = ContainerID(%q) = %q", a, b, ida)
		}
	})
}
