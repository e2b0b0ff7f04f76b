package main

import (
	"errors"
	"fmt"

	"ceval.dev/ceval/launcher"
)

// stateDirCheck says whether the runs' user namespaces can traverse containerd's state
// directory, and how to fix it when they cannot (the refusal every run gives, in doctor's words).
func stateDirCheck(address string) check {
	s, err := launcher.InspectStateDir(address)
	var closed *launcher.StateDirClosedError
	switch {
	case err != nil:
		return check{"containerd dirs", "note", "not checked: " + err.Error(), ""}
	case errors.As(s.Err(), &closed):
		return check{"containerd dirs", "FAIL", fmt.Sprintf("%s (on the state path %s) is %04o: runc in each run's user namespace cannot traverse it to the rootfs, so every run fails \"error preparing rootfs: permission denied\"", s.Closed, s.State, s.Mode),
			s.Fix()}
	}
	return check{"containerd dirs", "ok", fmt.Sprintf("state %s traversable by the runs' user namespaces (root %s)", s.State, s.Root), ""}
}
