// Command ceval evaluates AI coding agents on tasks: it runs each agent in a container it
// launches itself through containerd, as an unprivileged UID, and grades the result outside.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/containerd/containerd/v2/client"
	"github.com/spf13/cobra"

	"ceval.dev/ceval/internal/initgc"
	"ceval.dev/ceval/internal/phasetime"
	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/sandbox/kubernetes"
	"ceval.dev/ceval/wasm/worker"
)

// Exit codes shared by every command.
const (
	exitOK       = 0
	exitFailure  = 1 // the task (or a checked thing) failed
	exitInvalid  = 2 // bad input: flags, task files
	exitInfraErr = 3 // ceval's side: containerd, images, ERROR or NOT_GRADED results
)

// exitError carries an exit code through cobra back to main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// exitWith gives err an exit code; an err that already carries one keeps its own.
func exitWith(code int, err error) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{code: code, err: err}
}

// exitCode ends the command with code and prints nothing more: what it has to say, it said.
func exitCode(code int) error { return &exitError{code: code} }

// globalOptions are the flags every command sees.
type globalOptions struct {
	containerdAddress string
	namespace         string
	configPath        string
	allowRlimitLimits bool // rootless without a delegated cgroup subtree: limits by rlimits
	// kube is set when runs go to a Kubernetes cluster: sessions then need no containerd.
	kube *kubernetes.Options
}

// connect dials the containerd the flags name. When neither the flag nor the variable
// named one and the system socket is absent, it says on stderr that the private daemon of
// `make setup` is the one in use.
func (g *globalOptions) connect(ctx context.Context, cmd *cobra.Command) (*client.Client, context.Context, error) {
	ucfg, _ := g.config(cmd) // a broken config file fails the command where it is read
	if err := g.enterRootless(g.allowRlimitLimits || ucfg.AllowRlimitLimits); err != nil {
		return nil, nil, err
	}
	if !cmd.Flags().Changed("containerd-address") {
		if addr, why := launcher.DiscoverAddress(os.Getenv("CEVAL_CONTAINERD_ADDRESS"), launcher.SocketExists); why != "" && addr == g.containerdAddress {
			fmt.Fprintf(os.Stderr, "ceval: containerd at %s: %s\n", addr, why)
		}
	}
	return launcher.Connect(ctx, g.containerdAddress, g.namespace)
}

// connectRuns is connect for every command that starts containers (run, experiments, audit,
// selftest, sandbox exec, a verifier tier): a daemon where every run would fail on its state
// path is refused here, before anything is created, in one line naming the fix (exit 3).
func (g *globalOptions) connectRuns(ctx context.Context, cmd *cobra.Command) (*client.Client, context.Context, error) {
	c, cctx, err := g.connect(ctx, cmd)
	if err != nil {
		return nil, nil, exitWith(exitInfraErr, err)
	}
	if err := launcher.CheckStateDir(g.containerdAddress); err != nil {
		c.Close()
		return nil, nil, exitWith(exitInfraErr, err)
	}
	return c, cctx, nil
}

// config loads the user's config file (--config, or the default path when it exists).
func (g *globalOptions) config(cmd *cobra.Command) (userConfig, error) {
	explicit := cmd.Flags().Changed("config")
	return loadUserConfig(g.configPath, explicit)
}

func newRootCmd() *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:           "ceval",
		Short:         "Evaluate AI coding agents on tasks, safely",
		Long:          "ceval runs an agent CLI in a hardened container launched through containerd\n(UID/GID 2000, no capabilities, no_new_privs, limits, read-only rootfs, no network)\nand grades what it left behind outside the container.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.containerdAddress, "containerd-address", launcher.AddressFromEnv(), "containerd socket (env CEVAL_CONTAINERD_ADDRESS)")
	root.PersistentFlags().StringVar(&g.namespace, "namespace", launcher.NamespaceFromEnv(), "containerd namespace (env CEVAL_NAMESPACE)")
	root.PersistentFlags().StringVar(&g.configPath, "config", defaultConfigPath(), "config file: allow_env, allow_host_network, verifier_network (none or host: the network of verifier containers), prices (USD per million tokens by model, for run_limits.max_usd), gateway_allow (what the model gateway forwards), id_range (host IDs of the runs' user namespaces), judge (the model llm_judge asks), allow_rlimit_limits (rootless without a delegated cgroup subtree), backend (local or kubernetes), kubernetes (the cluster of backend: kubernetes), pull (when runs pull registry images), hosts_dir and docker_config (registry hosts, CAs and credentials)")
	root.PersistentFlags().BoolVar(&g.allowRlimitLimits, "allow-rlimit-limits", false, "rootless without a cgroup subtree delegated by root: hold pids by RLIMIT_NPROC and memory by RLIMIT_AS per process, cpu not limited (config: allow_rlimit_limits)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return exitWith(exitInvalid, err) })
	root.AddCommand(newVersionCmd(), newValidateCmd(), newGradeCmd(g), newRunCmd(g), newSandboxCmd(g), newDoctorCmd(g))
	root.AddCommand(newImagesCmd(g))
	root.AddCommand(newPlanCmd(), newReportCmd(), newRegradeCmd(g), newGCCmd(g))
	root.AddCommand(newBundleCmd())
	root.AddCommand(newSelftestCmd(g))
	root.AddCommand(newRootlessCmd())
	root.AddCommand(newCompareCmd())
	root.AddCommand(newAuditCmd(g))
	root.AddCommand(newImportCmd(), newSchemaCmd(), newExportCmd())
	refuseUnknownCommands(root)
	return root
}

// The collector was off while the packages initialised (internal/initgc); the main
// package's init runs after all of theirs.
func init() { initgc.Restore() }

func main() {
	phasetime.Mark("main")
	// ceval re-executes itself as the unprivileged worker that runs WASM criteria.
	if len(os.Args) > 1 && os.Args[1] == worker.Command {
		worker.Main()
		return
	}
	// ... and, rootless, as the helper that listens inside a container's network namespace.
	if len(os.Args) > 1 && os.Args[1] == launcher.ListenHelperArg {
		os.Exit(launcher.ListenHelperMain(os.Args[2:]))
	}
	restoreRootlessGC()
	rootlessChdir()
	rootlessInherit()
	os.Exit(execute(os.Args[1:]))
}

func execute(args []string) int {
	ctx, stop := interruptible(context.Background())
	defer stop()
	stdout, outputLost, keepStop := keepWritingPastClosedPipes()
	defer keepStop()
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	cmd, err := root.ExecuteContextC(ctx)
	code := exitOK
	var ee *exitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		if ee.err != nil {
			fmt.Fprintln(os.Stderr, "ceval:", ee.err)
		}
		code = ee.code
	default:
		fmt.Fprintln(os.Stderr, "ceval:", err)
		code = exitInvalid
	}
	if c, ok := interruptedExit(ctx, cmd, code); ok {
		fmt.Fprintf(os.Stderr, "ceval: %v\n", context.Cause(ctx))
		code = c
	}
	if outputLost() { // after the command finished, with its files written: say what it could not
		fmt.Fprintf(os.Stderr, "ceval: its output was cut off (a closed pipe); the command finished (exit %d before)\n", code)
		code = exitOutputLost
	}
	return code
}
