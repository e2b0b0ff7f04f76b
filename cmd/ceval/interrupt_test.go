package main

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"github.com/spf13/cobra"
)

func TestInterruptedExitIs128PlusTheSignalUnlessTheCommandKeepsItsOwn(t *testing.T) {
	plain := &cobra.Command{Use: "images"}
	run := &cobra.Command{Use: "run", Annotations: map[string]string{keepsExitOnInterrupt: "3"}}
	byCause := func(cause error) context.Context {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		return ctx
	}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		cmd  *cobra.Command
		code int
		want int
	}{
		{"not interrupted: the command's code", context.Background(), plain, exitInfraErr, exitInfraErr},
		{"cancelled for another reason: the command's code", byCause(errors.New("other")), plain, exitInfraErr, exitInfraErr},
		{"SIGINT and failed: 130", byCause(interruption{syscall.SIGINT}), plain, exitInfraErr, 130},
		{"SIGTERM and failed: 143", byCause(interruption{syscall.SIGTERM}), plain, exitFailure, 143},
		{"SIGTERM but finished: 0", byCause(interruption{syscall.SIGTERM}), plain, exitOK, exitOK},
		{"run keeps its documented 3", byCause(interruption{syscall.SIGINT}), run, exitInfraErr, exitInfraErr},
		{"no command found", byCause(interruption{syscall.SIGTERM}), nil, exitInvalid, 143},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, _ := interruptedExit(tc.ctx, tc.cmd, tc.code); got != tc.want {
				t.Errorf("exit %d, want %d", got, tc.want)
			}
		})
	}
}

// TestRunCommandKeepsItsExitOnInterrupt: the annotation sits on the command the tree runs.
func TestRunCommandKeepsItsExitOnInterrupt(t *testing.T) {
	cmd, _, err := newRootCmd().Find([]string{"run"})
	if err != nil || cmd.Annotations[keepsExitOnInterrupt] == "" {
		t.Fatalf("run: %v, annotations %v", err, cmd.Annotations)
	}
}
