package supervisor

import (
	"context"

	"github.com/containerd/containerd/v2/client"

	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/sandbox/kubernetes"
	"ceval.dev/ceval/sandbox/local"
	"ceval.dev/ceval/task"
)

// The local containerd backend is package sandbox/local; these are its names as supervisor's
// callers knew them.

// Sandbox is local.Sandbox: a created local agent container with its scratch filesystems.
type Sandbox = local.Sandbox

// NewSandbox is local.NewSandbox.
func NewSandbox(ctx context.Context, cfg SandboxConfig) (*Sandbox, error) {
	return local.NewSandbox(ctx, cfg)
}

// DefaultInitDir is local.DefaultInitDir.
func DefaultInitDir() string { return local.DefaultInitDir() }

// Rootless is local.Rootless.
type Rootless = local.Rootless

// EnterRootless is local.EnterRootless.
func EnterRootless(r Rootless) error { return local.EnterRootless(r) }

// CheckUserNamespaces is local.CheckUserNamespaces.
func CheckUserNamespaces(r IDRange) (string, error) { return local.CheckUserNamespaces(r) }

// RootVerifierSupported is local.RootVerifierSupported.
func RootVerifierSupported() bool { return local.RootVerifierSupported() }

// GC is local.GC.
func GC(ctx context.Context, c *client.Client) (removed, kept []launcher.Swept, err error) {
	return local.GC(ctx, c)
}

// SandboxConfig is sandbox.Config, under its old name.
type SandboxConfig = sandbox.Config

// Outcome is sandbox.Outcome, under its old name.
type Outcome = sandbox.Outcome

// AgainConfig is sandbox.AgainConfig, under its old name.
type AgainConfig = sandbox.AgainConfig

// IDRange is sandbox.IDRange, under its old name: the subordinate ID range runs take their
// user namespaces' host IDs from (ceval's config id_range).
type IDRange = sandbox.IDRange

// DefaultIDRange is sandbox.DefaultIDRange.
var DefaultIDRange = sandbox.DefaultIDRange

// VerifierInfo is local.VerifierInfo.
func VerifierInfo(network string, t *task.Task) *record.VerifierResult {
	return local.VerifierInfo(network, t)
}

// KubeOptions is kubernetes.Options: the Kubernetes backend (ceval run --backend kubernetes).
type KubeOptions = kubernetes.Options

// CheckKubernetes is kubernetes.Check.
func CheckKubernetes(t *task.Task) error { return kubernetes.Check(t) }
