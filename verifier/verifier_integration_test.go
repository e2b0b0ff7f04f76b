package verifier

import (
	"strings"
	"testing"
)

func TestVerifierRunsTheCommandAsTheGraderOverACopyOfTheSnapshot(t *testing.T) {
	e, _, ctx := newExecutor(t)
	s := snap(t, map[string]string{"src/answer.txt": "42\n", "run.sh*": "#!/bin/sh\necho ran\n"})
	c := container(`id -u; id -g; cat src/answer.txt; ./run.sh; pwd; grep -c . /proc/self/status >/dev/null; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; touch /x 2>/dev/null || echo rootfs read-only`)
	r, err := e.Run(ctx, c, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := string(r.Stdout)
	for _, want := range []string{"3000\n3000\n42\nran\n/workspace\n", "CapEff:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2", "rootfs read-only"} {
		if !strings.Contains(got, want) {
			t.Errorf("stdout %q lacks %q (stderr %q)", got, want, r.Stderr)
		}
	}
	if r.ExitCode != 0 || !r.Exit.CgroupEmpty {
		t.Errorf("exit %d, cgroup empty %v", r.ExitCode, r.Exit.CgroupEmpty)
	}
	if r.Isolation == nil || r.Isolation.UID != 3000 {
		t.Errorf("attested %+v, want UID 3000", r.Isolation)
	}
}
