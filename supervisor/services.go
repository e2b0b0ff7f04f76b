package supervisor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/containerd/containerd/v2/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"ceval.dev/ceval/gateway"
	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/closed"
	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/oci"
	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/sandbox/local"
	"ceval.dev/ceval/task"
)

// A task's services run beside the agent, each in a container hardened like the agent's
// (ceval's init as PID 1, attested before the service's process starts; no capabilities,
// no_new_privs, seccomp, read-only rootfs, memory/cpu/pids limits, capped tmpfs /workspace
// and home) as policy.ServiceUID in a user namespace range of its own (an ID slot apart
// from the agent's: none of its host IDs is the agent's, so the agent can neither signal
// nor read it), with its own PID and network namespaces. Nothing connects the agent's
// network namespace to a service's but ceval: for each declared port it listens on
// NAME's loopback address inside every agent container's namespace and, per connection,
// dials the port on the service's own loopback from inside the service's namespace. So the
// agent reaches exactly the declared ports, and a service reaches neither the agent, the
// model gateway, the mocks nor any network. The agent's /etc/hosts names the addresses. A
// service reaches the services it depends on the same way (their ports relayed into its own
// namespace, the same /etc/hosts), and no other.

// A service whose task says network: host runs in the host's network namespace (the
// daemon's), as an agent with sandbox.network: host does, and only when the user allows
// host networking the same way (--allow-host-network, allow_host_network: true): it then
// reaches what such an agent could. The agent's own network stays as its task says, and
// the agent still reaches the service only through the relay of its declared ports; the
// run installs nothing in the host's namespace (such a service takes no depends_on).

// checkServiceNetwork refuses a service's network: host unless the user allowed host
// networking, as CheckNetwork does the agent's.
func checkServiceNetwork(t *task.Task, allow Allow) error {
	for _, s := range t.Services {
		if s.Network == policy.NetworkHost && !allow.HostNetwork {
			return fmt.Errorf("task %s: service %s asks for network: host; allow it with --allow-host-network (or allow_host_network: true in ceval's config), as for an agent's sandbox.network: host", t.ID, s.Name)
		}
	}
	return nil
}

// PhaseServices starts the task's services and waits until each is ready: after launch,
// before setup and the agent (see the Phase constants in run.go).
const PhaseServices = "services"

// Bounds of a service's container.
const (
	serviceLogCap  = 8 << 20
	serviceHomeMB  = 64
	serviceGrace   = 2 * time.Second // SIGTERM to SIGKILL when ceval stops a service
	serviceSpare   = 30 * time.Minute
	serviceDialMax = 5 * time.Second // a relayed connection's dial into the service
	// maxRelays bounds the connections relayed at once for one run (each holds two sockets
	// and goroutines of ceval's): an agent opening thousands cannot exhaust ceval's file
	// descriptors, which every run of an experiment shares.
	maxRelays = 256
	// serviceNet is the first three octets of the services' loopback addresses in the
	// agent's namespace: the n-th service (from 1) is serviceNet.n.
	serviceNet = "127.0.10."
)

// ServiceError is a service that never became ready: the run is ERROR, not the agent's
// doing, and the agent was not started.
type ServiceError struct {
	Name, Why, Log string
}

func (e *ServiceError) Error() string {
	return fmt.Sprintf("service %s did not become ready: %s; its output is in %s; the agent was not started (fix the service's command, image or ready check)", e.Name, e.Why, e.Log)
}

// serviceSet is the run's services, the relay into the agent's namespace, and the agent's
// /etc/hosts.
type serviceSet struct {
	c       *client.Client
	runDir  string
	runID   string // the agent container's ID base: a service's container is runID-svc-NAME
	initDir string
	ids     sandbox.IDRange
	life    time.Duration // each service's deadline from its start
	redact  func(string) string
	emit    func(string, map[string]any)
	res     *[]record.ServiceResult
	images  map[string]string // the task's image name -> the resolved one
	svcs    []*service

	mu      sync.Mutex
	stopped bool
	lns     []net.Listener
	conns   map[net.Conn]bool
	active  int // relayed connections open (see maxRelays)
	relays  sync.WaitGroup
}

// service is one started service.
type service struct {
	spec    task.Service
	addr    string // its loopback address in the agent's namespace
	i       int    // its index in *serviceSet.res
	started time.Time
	log     *os.File
	sb      *local.Sandbox
	tk      *launcher.Task
	netns   *os.File
	// ownNetns: netns is not ceval's own (a service with network: host runs in the daemon's,
	// which is ceval's unless the daemon runs elsewhere): dial into it there.
	ownNetns bool
	stop     context.CancelFunc // ends the wait: SIGTERM, grace, SIGKILL, reap
	waited   chan struct{}      // closed once the wait returned
	exit     launcher.Exit
	waitErr  error
	halted   bool // ceval stopped it (set before stop is called)
}

// serviceLifetime bounds a service's life: the agent's every iteration, every step and
// every readiness wait, plus a margin. ceval stops it long before, after the agent.
func serviceLifetime(t *task.Task) time.Duration {
	d := t.Sandbox.Limits.Timeout*time.Duration(max(t.MaxRuns(), 1)) + serviceSpare
	for _, st := range append(append([]task.Step{}, t.Setup...), t.AfterAgent...) {
		d += st.Timeout
	}
	for _, s := range t.Services {
		d += time.Duration(s.Ready.Retries) * (s.Ready.Interval + s.Ready.Timeout)
	}
	return d
}

// hostsFile is the agent's /etc/hosts: the usual local names and one line per service.
func hostsFile(ss []task.Service) string {
	var b strings.Builder
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t" + oci.Hostname + "\n")
	for i, s := range ss {
		fmt.Fprintf(&b, "%s\t%s\n", serviceAddr(i), s.Name)
	}
	return b.String()
}

func serviceAddr(i int) string { return serviceNet + strconv.Itoa(i+1) }

// prepareServices resolves the services' images and writes the agent's /etc/hosts, whose
// read-only mount it returns; nil when the task has no services.
func (r *run) prepareServices(ctx context.Context) ([]oci.Mount, error) {
	t := r.t
	if len(t.Services) == 0 {
		return nil, nil
	}
	if _, isLocal := r.o.Backend.(*local.Backend); !isLocal || r.o.Client == nil {
		return nil, &sandbox.InputError{Err: fmt.Errorf("task %s has services, which only the local containerd backend runs", t.ID)}
	}
	if err := checkRlimitServices(t, local.RootlessMode()); err != nil {
		return nil, &sandbox.InputError{Err: err}
	}
	for _, tool := range launcher.RedirectTools() {
		if _, err := os.Stat(tool); err != nil {
			return nil, &InfraError{fmt.Errorf("task %s has services, whose relay needs %s: %w (apt-get install nftables util-linux)", t.ID, tool, err)}
		}
	}
	set := &serviceSet{
		c: r.o.Client, runDir: r.dir, initDir: r.o.InitDir, ids: r.o.IDs, life: serviceLifetime(t), redact: r.redact, emit: r.emit,
		runID: fmt.Sprintf("%s-%s-%s-%d", r.o.RunID, r.o.Variant, t.ID, r.o.Repeat), res: &r.res.Services,
		images: map[string]string{}, conns: map[net.Conn]bool{},
	}
	if set.initDir == "" {
		set.initDir = local.DefaultInitDir()
	}
	if set.ids == (sandbox.IDRange{}) {
		set.ids = sandbox.DefaultIDRange
	}
	r.svcs = set
	for _, s := range t.Services {
		if _, done := set.images[s.Image]; done {
			continue
		}
		img, err := images.Resolve(ctx, r.o.Client, s.Image, r.o.Preflight, r.o.Busybox)
		var missing *images.NotFoundError
		if errors.As(err, &missing) {
			if hint := images.HarborBuildHint(t, s.Image); hint != "" {
				err = fmt.Errorf("not in containerd namespace %s; build it as ceval import harbor said: %s", missing.Namespace, hint)
			}
		}
		if err != nil {
			return nil, &InfraError{fmt.Errorf("service %s: image %s: %w", s.Name, s.Image, err)}
		}
		set.images[s.Image] = img.Name
	}
	dir := filepath.Join(r.dir, record.ServicesDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, &InfraError{fmt.Errorf("services: %w", err)}
	}
	hosts := filepath.Join(dir, "hosts")
	if err := os.WriteFile(hosts, []byte(hostsFile(t.Services)), 0o644); err != nil {
		return nil, &InfraError{fmt.Errorf("services: %w", err)}
	}
	return []oci.Mount{{Source: hosts, Destination: "/etc/hosts"}}, nil
}

// rlimitMCPServeMB is the least memory_mb under which ceval-init --mcp-serve, a Go program,
// starts in rlimit mode (RLIMIT_AS): the Go runtime reserves its address space up front
// (measured rootless: 512 fails with "failed to reserve page summary memory", 1024 serves).
const rlimitMCPServeMB = 1024

// checkRlimitServices refuses, on a rootless daemon in rlimit mode (no delegated cgroup
// subtree: memory is RLIMIT_AS per process), a stdio MCP service whose memory_mb is too small
// for the Go program ceval serves it with; the user can do something about either.
func checkRlimitServices(t *task.Task, rl *local.Rootless) error {
	if rl == nil || rl.Delegated != "" {
		return nil
	}
	for _, s := range t.Services {
		if s.MCP != nil && s.MCP.Transport == task.MCPStdio && s.Limits.MemoryMB < rlimitMCPServeMB {
			return fmt.Errorf("task %s: service %s is a stdio MCP server, which ceval serves with ceval-init --mcp-serve, a Go program that reserves some 700 MiB of address space at start; rootless without a delegated cgroup subtree holds memory by RLIMIT_AS, so its memory_mb %d cannot start it: give the service limits: {memory_mb: %d} (it bounds each process, not their sum), or have root run ceval rootless setup --user USER (docs/rootless.md)", t.ID, s.Name, s.Limits.MemoryMB, rlimitMCPServeMB)
		}
	}
	return nil
}

// startServices starts the services in order, each ready before the next starts.
func (r *run) startServices(ctx context.Context) error {
	if r.svcs == nil {
		return nil
	}
	for i, spec := range r.t.Services {
		if err := r.svcs.start(ctx, i, spec); err != nil {
			return err
		}
	}
	return nil
}

// start makes, attests and starts one service, then waits for its readiness.
func (set *serviceSet) start(ctx context.Context, i int, spec task.Service) error {
	s := &service{spec: spec, addr: serviceAddr(i), i: len(*set.res), waited: make(chan struct{})}
	logRel := filepath.Join(record.ServicesDir, spec.Name+".log")
	*set.res = append(*set.res, record.ServiceResult{Name: spec.Name, Image: set.images[spec.Image], Address: s.addr, Ports: spec.Ports, Log: logRel})
	set.svcs = append(set.svcs, s)
	res := func() *record.ServiceResult { return &(*set.res)[s.i] }
	set.emit("service_starting", map[string]any{"name": spec.Name, "image": res().Image})
	att, err := set.launch(ctx, s, filepath.Join(set.runDir, logRel))
	res().Isolation = att
	if err != nil {
		return asRunError(fmt.Errorf("service %s: %w", spec.Name, err))
	}
	tries, err := set.waitReady(ctx, s)
	res().ReadyTries = tries
	if err != nil {
		var se *ServiceError
		if errors.As(err, &se) {
			se.Log = logRel
			set.emit("service_not_ready", map[string]any{"name": spec.Name, "why": se.Why, "log": logRel})
		}
		return &InfraError{err}
	}
	res().Ready, res().ReadySeconds = true, time.Since(s.started).Seconds()
	set.emit("service_ready", map[string]any{"name": spec.Name, "address": s.addr, "ports": spec.Ports, "seconds": res().ReadySeconds, "tries": tries})
	return nil
}

// launch makes the service's sandbox (scratch filesystems of its own owned by an ID slot of
// its own, ceval's init, the lifeline, the hardened spec: a Sandbox like the agent's, as
// policy.ServiceUID), starts it, attests its init and lets the service's process start.
func (set *serviceSet) launch(ctx context.Context, s *service, logPath string) (*record.Attestation, error) {
	spec := s.spec
	var err error
	if s.log, err = os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600); err != nil {
		return nil, err
	}
	argv, env, workdir, err := set.runConfig(ctx, spec)
	if err != nil {
		return nil, err
	}
	argv = mcpServeArgv(spec, argv) // a stdio MCP server behind ceval-init --mcp-serve (mcp.go)
	s.sb, err = local.NewSandbox(ctx, sandbox.Config{
		Client: set.c, Image: set.images[spec.Image], ID: set.runID + "-svc-" + spec.Name,
		Argv: argv, Env: env, Cwd: workdir, UserName: "service", UID: policy.ServiceUID,
		Limits:  task.Limits{Timeout: set.life, MemoryMB: spec.Limits.MemoryMB, CPUs: spec.Limits.CPUs, Pids: spec.Limits.Pids, DiskMB: spec.Limits.DiskMB},
		Network: cmp.Or(spec.Network, policy.NetworkNone), Grace: serviceGrace, InitDir: set.initDir, IDs: set.ids,
		Dir:    filepath.Join(set.runDir, scratchSubdir+"-services", spec.Name),
		Stdout: s.log, Stderr: s.log, LogCap: serviceLogCap,
		// It reaches the services it depends on (started and ready before it) as the agent does.
		Mounts: set.mounts(), BeforeStart: func(ctx context.Context, pid uint32) error {
			if len(spec.DependsOn) == 0 {
				return nil
			}
			return set.relayInto(ctx, pid, spec.DependsOn)
		},
		Prepare: func(ws, _ string) error {
			if spec.Files == nil {
				return nil
			}
			if err := copyTemplate(spec.Files, ws); err != nil {
				return fmt.Errorf("files %s: %w", spec.Files.Path, err)
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	s.started = time.Now()
	tk, att, err := s.sb.Start(ctx)
	if err != nil {
		return att, err
	}
	s.tk = tk
	// From here the wait runs on its own: stop ends it, and a service that exits early is
	// seen by its readiness loop or recorded when it is stopped.
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stop = stop
	go func() {
		defer close(s.waited)
		s.exit, s.waitErr = tk.Wait(wctx, set.life, serviceGrace)
	}()
	if s.netns, err = launcher.OpenNetns(tk.Pid()); err != nil {
		return att, err
	}
	s.ownNetns = !sameNetns(s.netns)
	set.emit("service_started", map[string]any{"name": spec.Name, "isolation": att})
	return att, nil
}

// runConfig is what the service runs: its command, else its image's entrypoint and
// command; the image's environment under the task's (the task's wins, and ceval's own HOME,
// USER and PATH are set unless one of them names its own); its workdir, else the image's,
// else DefaultServiceWorkdir.
func (set *serviceSet) runConfig(ctx context.Context, spec task.Service) (argv, env []string, workdir string, err error) {
	img, err := images.RunConfig(ctx, set.c, set.images[spec.Image])
	if err != nil {
		return nil, nil, "", fmt.Errorf("image %s: %w", spec.Image, err)
	}
	return serviceRun(spec, img)
}

// serviceRun is runConfig's decision, given the image's run configuration.
func serviceRun(spec task.Service, img ocispec.ImageConfig) (argv, env []string, workdir string, err error) {
	argv = spec.Command
	if len(argv) == 0 {
		argv = append(append([]string{}, img.Entrypoint...), img.Cmd...)
	}
	if len(argv) == 0 || argv[0] == "" {
		return nil, nil, "", &sandbox.InputError{Err: fmt.Errorf("image %s has no entrypoint or command: give the service a command", spec.Image)}
	}
	ours := map[string]bool{}
	for _, kv := range spec.Env {
		k, _, _ := strings.Cut(kv, "=")
		ours[k] = true
	}
	for _, kv := range img.Env {
		if k, _, ok := strings.Cut(kv, "="); ok && envName(k) && !ours[k] && k != "HOME" && k != "USER" {
			env = append(env, kv)
			ours[k] = true
		}
	}
	env = append(env, spec.Env...)
	workdir = cmp.Or(spec.Workdir, path.Clean("/"+img.WorkingDir))
	if workdir == "/" {
		workdir = task.DefaultServiceWorkdir
	}
	return argv, env, workdir, nil
}

// envName reports whether k is a name oci accepts in the environment.
func envName(k string) bool {
	if k == "" || (k[0] >= '0' && k[0] <= '9') {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// waitReady runs the service's readiness check until it passes, the service exits or the
// retries run out (a *ServiceError); it returns the tries made.
func (set *serviceSet) waitReady(ctx context.Context, s *service) (int64, error) {
	rd := s.spec.Ready
	var last string
	for try := int64(1); try <= rd.Retries; try++ {
		select {
		case <-s.waited:
			return try - 1, &ServiceError{Name: s.spec.Name, Why: fmt.Sprintf("it exited with status %d before it was ready", s.exit.Code)}
		default:
		}
		var ok bool
		ok, last = set.probe(ctx, s, try)
		if ok {
			return try, nil
		}
		if ctx.Err() != nil {
			return try, ctx.Err()
		}
		select {
		case <-time.After(rd.Interval):
		case <-s.waited:
		case <-ctx.Done():
			return try, ctx.Err()
		}
	}
	check := fmt.Sprintf("TCP port %d", rd.TCP)
	if rd.TCP == 0 {
		check = fmt.Sprintf("command %q", rd.Command)
	}
	return rd.Retries, &ServiceError{Name: s.spec.Name, Why: fmt.Sprintf("%s failed %d tries over %.1fs (last: %s)", check, rd.Retries, time.Since(s.started).Seconds(), last)}
}

// probe runs one readiness check: a connection to the TCP port on the service's own
// loopback, or the command in its container.
func (set *serviceSet) probe(ctx context.Context, s *service, try int64) (bool, string) {
	rd := s.spec.Ready
	if rd.TCP != 0 {
		c, err := s.dial(ctx, rd.TCP, rd.Timeout)
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return true, ""
	}
	var out tailBuffer
	r, err := s.tk.Exec(ctx, fmt.Sprintf("ready-%d", try), rd.Command, rd.Timeout, &out)
	switch {
	case err != nil:
		return false, err.Error()
	case r.TimedOut:
		return false, fmt.Sprintf("timed out after %s", rd.Timeout)
	case r.Code != 0:
		return false, fmt.Sprintf("exit status %d: %s", r.Code, strings.TrimSpace(set.redact(out.String())))
	}
	return true, ""
}

// dial connects to port on the service's own loopback: from inside its network namespace,
// or directly when that is ceval's own (network: host; a rootless ceval may not enter the
// host's namespace it is in already, which its user namespace does not own).
func (s *service) dial(ctx context.Context, port int, timeout time.Duration) (net.Conn, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if !s.ownNetns {
		return (&net.Dialer{Timeout: timeout}).DialContext(ctx, "tcp", addr)
	}
	return launcher.DialInNetns(ctx, s.netns, addr, timeout)
}

// sameNetns reports whether ns is this process's own network namespace.
func sameNetns(ns *os.File) bool {
	a, err := ns.Stat()
	if err != nil {
		return false
	}
	// This thread's: one that entered a container's (launcher.DialInNetns) is locked to
	// the goroutine that did, never this one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b, err := os.Stat("/proc/thread-self/ns/net")
	return err == nil && os.SameFile(a, b)
}

// tailBuffer keeps the last 512 bytes written to it.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 512 {
		t.b = t.b[len(t.b)-512:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// beforeStart opens, inside the network namespace of an agent container about to start
// (host PID pid), a listener on each service's address for each of its ports, and relays
// each connection into the service.
func (set *serviceSet) beforeStart(ctx context.Context, pid uint32) error {
	if set == nil {
		return nil
	}
	return set.relayInto(ctx, pid, nil)
}

// relayInto is beforeStart for the services named (nil: all of them).
func (set *serviceSet) relayInto(ctx context.Context, pid uint32, names []string) error {
	// Each listener takes a port of the kernel's choosing on the service's address, and the
	// namespace redirects NAME:PORT to it: a program there may still listen on a wildcard
	// address at PORT without colliding with the relay.
	var rs []launcher.Redirect
	for _, s := range set.svcs {
		if names != nil && !slices.Contains(names, s.spec.Name) {
			continue
		}
		for _, port := range s.spec.Ports {
			ln, err := gateway.ListenInNetns(pid, net.JoinHostPort(s.addr, "0"))
			if err != nil {
				return fmt.Errorf("service %s: %w", s.spec.Name, err)
			}
			set.mu.Lock()
			if set.stopped {
				set.mu.Unlock()
				ln.Close()
				return fmt.Errorf("service %s: stopped already", s.spec.Name)
			}
			set.lns = append(set.lns, ln)
			set.relays.Add(1) // under the lock that stop takes before it waits
			set.mu.Unlock()
			rs = append(rs, launcher.Redirect{Addr: netip.MustParseAddr(s.addr), Port: uint16(port), ToPort: uint16(ln.Addr().(*net.TCPAddr).Port)})
			go set.accept(ctx, ln, s, port)
		}
	}
	return launcher.RedirectInNetns(pid, rs)
}

// ServiceAccess is how a verifier container reaches the run's services while they still
// run, as the agent did: the agent's /etc/hosts, and the relay into its own network
// namespace of the services its criterion names.
type ServiceAccess struct{ set *serviceSet }

// Hosts is the read-only /etc/hosts mount naming the services.
func (a *ServiceAccess) Hosts() oci.Mount {
	return oci.Mount{Source: filepath.Join(a.set.runDir, record.ServicesDir, "hosts"), Destination: "/etc/hosts"}
}

// BeforeStart relays the services named into the network namespace of a container about
// to start (see sandbox.Config.BeforeStart); an unknown name is an error.
func (a *ServiceAccess) BeforeStart(names []string) launcher.StartHook {
	return func(ctx context.Context, pid uint32) error {
		for _, n := range names {
			if !slices.ContainsFunc(a.set.svcs, func(s *service) bool { return s.spec.Name == n }) {
				return fmt.Errorf("service %s is not running", n)
			}
		}
		return a.set.relayInto(ctx, pid, names)
	}
}

func (set *serviceSet) accept(ctx context.Context, ln net.Listener, s *service, port int) {
	defer set.relays.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		if !set.admit() {
			c.Close() // over maxRelays: the agent sees its connection closed at once
			continue
		}
		if !set.track(c) {
			set.release()
			c.Close()
			return
		}
		set.relays.Add(1)
		go func() {
			defer set.relays.Done()
			defer set.release()
			defer set.untrack(c)
			up, err := s.dial(ctx, port, serviceDialMax)
			if err != nil {
				return // the agent sees its connection closed, as if the port refused it
			}
			if !set.track(up) {
				up.Close()
				return
			}
			defer set.untrack(up)
			relay(c, up)
		}()
	}
}

// relay copies both ways until each side has closed its half.
func relay(a, b net.Conn) {
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			dst.Close()
		}
		done <- struct{}{}
	}
	go pipe(a, b)
	go pipe(b, a)
	<-done
	<-done
}

// admit counts one more relayed connection unless maxRelays are open already.
func (set *serviceSet) admit() bool {
	set.mu.Lock()
	defer set.mu.Unlock()
	if set.active >= maxRelays {
		return false
	}
	set.active++
	return true
}

func (set *serviceSet) release() {
	set.mu.Lock()
	set.active--
	set.mu.Unlock()
}

func (set *serviceSet) track(c net.Conn) bool {
	set.mu.Lock()
	defer set.mu.Unlock()
	if set.stopped {
		return false
	}
	set.conns[c] = true
	return true
}

func (set *serviceSet) untrack(c net.Conn) {
	set.mu.Lock()
	delete(set.conns, c)
	set.mu.Unlock()
	c.Close()
}

// stop ends the relay, then stops every service (last started first), deletes its
// container and scratch filesystems, releases its IDs, and records how each ended, its log
// redacted. Idempotent.
func (set *serviceSet) stop() error {
	if set == nil {
		return nil
	}
	set.mu.Lock()
	if set.stopped {
		set.mu.Unlock()
		return nil
	}
	set.stopped = true
	for _, ln := range set.lns {
		ln.Close()
	}
	for c := range set.conns {
		c.Close()
	}
	set.mu.Unlock()
	set.relays.Wait()
	var errs []error
	for i := len(set.svcs) - 1; i >= 0; i-- {
		errs = append(errs, set.svcs[i].close(set))
	}
	_ = os.Remove(filepath.Join(set.runDir, scratchSubdir+"-services")) // empty once each service's is gone
	return errors.Join(errs...)
}

// close stops one service and undoes everything its launch made.
func (s *service) close(set *serviceSet) error {
	var errs []error
	res := &(*set.res)[s.i]
	if s.tk != nil {
		early := closed.Is(s.waited)
		s.stop()
		<-s.waited
		if s.waitErr != nil {
			errs = append(errs, s.waitErr)
		}
		res.OutputCut = s.exit.OutputCut
		if early && !s.exit.Interrupted {
			code := s.exit.Code
			res.ExitCode, res.ExitedEarly = &code, true
			set.emit("service_exited", map[string]any{"name": s.spec.Name, "exit_code": code})
		}
		if !s.exit.Interrupted && !s.exit.CgroupEmpty {
			errs = append(errs, fmt.Errorf("processes remained in its container after the kill (%s)", s.exit.CgroupError))
		}
	} else if s.stop != nil {
		s.stop()
	}
	if s.netns != nil {
		errs = append(errs, s.netns.Close())
	}
	if s.sb != nil {
		errs = append(errs, s.sb.Close(context.Background()))
	}
	if s.log != nil {
		errs = append(errs, s.log.Close())
	}
	if err := redactFile(filepath.Join(set.runDir, res.Log), set.redact); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("redacting its log: %w", err))
	}
	set.emit("service_stopped", map[string]any{"name": s.spec.Name})
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("service %s: %w", s.spec.Name, err)
	}
	return nil
}

// stopServices stops the run's services: after the agent, or after the grade when a
// criterion reaches them (see task.Task.GradesWithServices). Idempotent.
func (r *run) stopServices() error {
	if err := r.svcs.stop(); err != nil {
		return &InfraError{fmt.Errorf("services: %w", err)}
	}
	return nil
}

// stepBeforeStart is the relay into a step's container; nil without services.
func (set *serviceSet) stepBeforeStart() launcher.StartHook {
	if set == nil {
		return nil
	}
	return set.beforeStart
}

// mounts is the agent's /etc/hosts naming the services, for a step's container; nil without
// services.
func (set *serviceSet) mounts() []oci.Mount {
	if set == nil {
		return nil
	}
	return []oci.Mount{(&ServiceAccess{set}).Hosts()}
}
