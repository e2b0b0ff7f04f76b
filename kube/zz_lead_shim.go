package kube

// TEMPORARY shim (lead's branch only) until K1 and K2 merge: delete at merge.

import (
	"context"
	"io"
	"net"

	"ceval.dev/ceval/internal/kubeproto"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/snapshot"
)

type FileMount struct{ Path, File string }

type Session struct{}

func NewSession(ctx context.Context, dial func(context.Context) (net.Conn, error), start kubeproto.Start) (*Session, *kubeproto.Attest, error) {
	panic("shim")
}
func (s *Session) CopyIn(ctx context.Context, dir string, r io.Reader) error { panic("shim") }
func (s *Session) Go(ctx context.Context, stdout, stderr io.Writer, relay func(string) (net.Conn, error)) error {
	panic("shim")
}
func (s *Session) Kill(reason string) error                          { panic("shim") }
func (s *Session) Wait(ctx context.Context) (*kubeproto.Exit, error) { panic("shim") }
func (s *Session) CopyOut(ctx context.Context, dir, dst string, lim snapshot.Limits) (*snapshot.Snapshot, error) {
	panic("shim")
}
func (s *Session) Close() error                                    { panic("shim") }
func Attestation(a *kubeproto.Attest) (*record.Attestation, error) { panic("shim") }
func MemoryLimit(a *kubeproto.Attest) (int64, bool)                { panic("shim") }

func (c *Cluster) PortForward(ctx context.Context, namespace, pod string, port int) (net.Conn, error) {
	panic("shim")
}
