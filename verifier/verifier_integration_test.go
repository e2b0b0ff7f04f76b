package verifier

import (
	"strings"
	"testing"
	"time"
)

// By default the command runs as root of its own user namespace (the verifier's capability
// set, no_new_privs, seccomp) over a writable copy of the image's root; Unprivileged runs
// it as the grader's UID over the read-only root. Both over a copy of the snapshot.
func TestVerifierRunsTheCommandOverACopyOfTheSnapshot(t *testing.T) {
	e, c, ctx := newExecutor(t)
	unpriv, err := New(Options{Client: c, Grace: 500 * time.Millisecond, ScratchDir: t.TempDir(), Unprivileged: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unpriv.Close() })
	s := snap(t, map[string]string{"src/answer.txt": "42\n", "run.sh*": "#!/bin/sh\necho ran\n"})
	cmd := `id -u; id -g; cat src/answer.txt; ./run.sh; pwd; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; touch /x 2>/dev/null && echo rootfs writable || echo rootfs read-only`
	for _, tc := range []struct {
		name string
		ex   *Executor
		uid  int
		want []string
	}{
		{"root", e, 0, []string{"0\n0\n42\nran\n/workspace\n", "CapEff:\t00000000800000fb", "rootfs writable"}},
		{"unprivileged", unpriv, 3000, []string{"3000\n3000\n42\nran\n/workspace\n", "CapEff:\t0000000000000000", "rootfs read-only"}},
	} {
		r, err := tc.ex.Run(ctx, container(cmd), s, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := string(r.Stdout)
		for _, want := range append(tc.want, "NoNewPrivs:\t1", "Seccomp:\t2") {
			if !strings.Contains(got, want) {
				t.Errorf("%s: stdout %q lacks %q (stderr %q)", tc.name, got, want, r.Stderr)
			}
		}
		if r.ExitCode != 0 || !r.Exit.CgroupEmpty {
			t.Errorf("%s: exit %d, cgroup empty %v", tc.name, r.ExitCode, r.Exit.CgroupEmpty)
		}
		if r.Isolation == nil || r.Isolation.UID != tc.uid || r.Isolation.HostUID == 0 {
			t.Errorf("%s: attested %+v, want UID %d mapped off host root", tc.name, r.Isolation, tc.uid)
		}
	}
}
