package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"go.yaml.in/yaml/v3"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/internal/kubetest"
	"ceval.dev/ceval/internal/testtree"
	"ceval.dev/ceval/kube"
	"ceval.dev/ceval/record"
	sbkube "ceval.dev/ceval/sandbox/kubernetes"
	"ceval.dev/ceval/task"
	"ceval.dev/ceval/wasm"
)

// kubeTestOptions connects to the test cluster, puts the init image and the default image
// into its node, and returns the Kubernetes backend's options in a namespace of the test's own.
func kubeTestOptions(t *testing.T) *sbkube.Options {
	t.Helper()
	c := kubetest.Connect(t)
	ns := kubetest.Namespace(t, c)
	initImage := kubetest.InitImage(t)
	node, nctx := kubetest.NodeContainerd(t)
	if _, err := images.EnsureDefault(nctx, node, images.DefaultOptions{}); err != nil {
		t.Fatalf("the default image into the node: %v", err)
	}
	return &sbkube.Options{Cluster: c, Namespace: ns, Controller: kube.ControllerID(), InitImage: initImage, PullPolicy: kube.PullNever}
}

// kubeRun runs a loaded task on the cluster.
func kubeRun(t *testing.T, k *sbkube.Options, tk *task.Task, o Options) (*record.Result, error) {
	t.Helper()
	o.Backend = sbkube.New(o.Pins, *k)
	if o.RunsDir == "" {
		o.RunsDir = t.TempDir()
	}
	if o.Grace == 0 {
		o.Grace = time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return Run(ctx, tk, o)
}

// kubeTask writes doc (and files) into a task directory and loads it.
func kubeTask(t *testing.T, doc string, files map[string]string) *task.Task {
	t.Helper()
	dir := testtree.New(t, files)
	p := filepath.Join(dir, "task.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func wasmExecutor(t *testing.T) *wasm.Executor {
	t.Helper()
	ex, err := wasm.NewExecutor(wasm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ex.Close() })
	return ex
}

// The hello example on the cluster: the same result as on the local backend, with the
// Pod's isolation attested by its init and nothing left in the namespace.
func TestKubeHelloExampleMatchesTheLocalBackend(t *testing.T) {
	k := kubeTestOptions(t)
	tk, err := task.Load("../examples/hello/task.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ex := wasmExecutor(t)
	kres, err := kubeRun(t, k, tk, Options{Executor: ex})
	if err != nil {
		t.Fatalf("kubernetes: %v", err)
	}
	c, ctx := ctrtest.Connect(t)
	lres, err := runLoaded(t, ctx, c, tk, Options{Executor: ex})
	if err != nil {
		t.Fatalf("local: %v", err)
	}
	if kres.Status != "SUCCESS" || kres.Status != lres.Status || kres.Score != lres.Score || len(kres.Criteria) != len(lres.Criteria) {
		t.Fatalf("kubernetes %s %v %+v, local %s %v %+v", kres.Status, kres.Score, kres.Criteria, lres.Status, lres.Score, lres.Criteria)
	}
	for i := range kres.Criteria {
		if kres.Criteria[i].Score != lres.Criteria[i].Score || kres.Criteria[i].Passed != lres.Criteria[i].Passed {
			t.Errorf("criterion %d: kubernetes %+v, local %+v", i, kres.Criteria[i], lres.Criteria[i])
		}
	}
	iso := kres.Isolation
	if iso == nil || iso.UID != 2000 || iso.GID != 2000 || iso.CapEff != "0000000000000000" || iso.CapBnd != "0000000000000000" || iso.NoNewPrivs != 1 || iso.Seccomp != 2 {
		t.Fatalf("isolation %+v", iso)
	}
	if kres.Image.ManifestDigest == "" && kres.Image.ConfigDigest == "" {
		t.Errorf("image %+v: the node's resolution of the image is not recorded", kres.Image)
	}
	t.Logf("image %+v", kres.Image)
	if len(iso.Interfaces) != 1 || iso.Interfaces[0] != "lo" {
		t.Errorf("interfaces %v, want only lo", iso.Interfaces)
	}
	if err := kubetest.Leftovers(context.Background(), k.Cluster, k.Namespace); err != nil {
		t.Errorf("left after the run: %v", err)
	}
}

// An agent that tries everything the cluster might offer it gets nothing: no network (the
// API server's service and the node's kubelet unreachable), no service-account token, no
// node filesystem, no privilege.
func TestKubeAgentGetsNothingOfTheCluster(t *testing.T) {
	k := kubeTestOptions(t)
	probes, err := k.Cluster.ProbeTargets(context.Background())
	if err != nil || len(probes) == 0 {
		t.Fatalf("probe targets %v: %v", probes, err)
	}
	var script strings.Builder
	script.WriteString("cd /workspace\n")
	for _, p := range probes {
		host, port, _ := strings.Cut(p, ":")
		script.WriteString("nc -w 2 " + host + " " + port + " </dev/null && echo reached " + p + " >> breach\n")
	}
	script.WriteString(`wget -q -T 2 -O- https://kubernetes.default.svc/ && echo dns-apiserver >> breach
[ -n "$KUBERNETES_SERVICE_HOST" ] && nc -w 2 "$KUBERNETES_SERVICE_HOST" "${KUBERNETES_SERVICE_PORT:-443}" </dev/null && echo env-apiserver >> breach
cat /var/run/secrets/kubernetes.io/serviceaccount/token && echo token >> breach
ls /var/lib/kubelet && echo kubelet-dir >> breach
cat /proc/1/root/etc/hostname && echo proc1root >> breach
touch /usr/bin/x && echo rootfs-writable >> breach
touch /.ceval/x && echo ceval-writable >> breach
mount -t tmpfs none /tmp && echo mount >> breach
ip link 2>/dev/null | grep -v ' lo:' | grep -q '^[0-9]' && echo interface >> breach
echo done > done
`)
	tk := kubeTask(t, `task_id: kube-attack
initial_prompt: get out
agent: {type: command, command: [sh, -c, "replaced below"]}
sandbox: {limits: {timeout: 60s}}
success_criteria:
  - {type: file_exists, path: done, description: the script ran to its end}
`, nil)
	tk.Agent.Command = []string{"sh", "-c", script.String()}
	res, err := kubeRun(t, k, tk, Options{})
	if err != nil {
		t.Fatal(err)
	}
	breach, berr := os.ReadFile(filepath.Join(res.Dir, record.WorkspaceDir, "breach"))
	if res.Status != "SUCCESS" || berr == nil {
		stderr, _ := os.ReadFile(filepath.Join(res.Dir, record.StderrFile))
		t.Fatalf("status %s %+v\nbreach: %s\nstderr: %s", res.Status, res.Criteria, breach, tail(stderr))
	}
}

// A fork bomb is held by the node's podPidsLimit (the shell that started it still runs and
// sees its forks refused) and a memory hog is OOM-killed by the container's memory limit; both
// runs end, are graded, and leave nothing running.
func TestKubeForkBombAndMemoryHogAreBounded(t *testing.T) {
	k := kubeTestOptions(t)
	for _, c := range []struct{ name, cmd, limits string }{
		// The top shell forks its sleep, then the bomb as one subshell, and nothing after it
		// (wait and echo are builtins): busybox sh exits at a refused fork, so a fork of the top
		// shell's after the bomb started would end the run by whether the pids limit was full at
		// that instant, not by the limit's effect. `f | f &` run by the top shell itself was
		// such a fork: it forks each element of the pipeline, the second after the first began
		// bombing (a loaded run's FAILURE: "can't fork", no done file).
		{"fork-bomb", `sleep 5 & w=$!; f() { f | f & }; (f) & wait $w; echo survived > /workspace/done`, "timeout: 60s"},
		{"memory-hog", `echo start > /workspace/done; x=a; while true; do x=$x$x; done`, "timeout: 60s, memory_mb: 64"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tk := kubeTask(t, "task_id: kube-"+c.name+"\ninitial_prompt: x\nagent: {type: command, command: [sh, -c, '"+strings.ReplaceAll(c.cmd, "'", "''")+"']}\nsandbox: {limits: {"+c.limits+"}}\nsuccess_criteria:\n  - {type: file_exists, path: done}\n", nil)
			start := time.Now()
			res, err := kubeRun(t, k, tk, Options{})
			if err != nil {
				t.Fatalf("%v (after %s)", err, time.Since(start))
			}
			stderr, _ := os.ReadFile(filepath.Join(res.Dir, record.StderrFile))
			if !res.Complete || res.Status != "SUCCESS" || res.Agent.ExitCode == nil || res.Agent.TimedOut {
				t.Fatalf("status %s complete %v timed out %v: %s\nstderr: %s", res.Status, res.Complete, res.Agent.TimedOut, res.Error, tail(stderr))
			}
			switch c.name {
			case "fork-bomb":
				if !strings.Contains(string(stderr), "fork") {
					t.Errorf("no fork was refused: the pids limit did not bite\nstderr: %s", tail(stderr))
				}
			case "memory-hog":
				if *res.Agent.ExitCode != 137 || !strings.Contains(strings.Join(res.LimitsHit, " "), "memory limit") {
					t.Errorf("exit %d, limits hit %v: want the hog OOM-killed at the memory limit", *res.Agent.ExitCode, res.LimitsHit)
				}
			}
			t.Logf("%s: exit %d, limits hit %v, in %s", c.name, *res.Agent.ExitCode, res.LimitsHit, time.Since(start))
		})
	}
}

// A protected mock on the cluster: the mock client (from the init image) answers at the
// tool's path in the Pod, each call relayed to the mock server on the controller, which
// records it; the same result as the local backend.
func TestKubeProtectedMockMatchesTheLocalBackend(t *testing.T) {
	k := kubeTestOptions(t)
	doc := `task_id: kube-mock
initial_prompt: list the pull requests
agent: {type: command, command: [sh, -c, 'gh pr list > /workspace/out.txt 2>&1; gh pr view 9 >> /workspace/out.txt 2>&1; touch /workspace/done']}
sandbox: {limits: {timeout: 60s}}
protected_mocks:
  - {tool: gh, fixture: gh.yaml, max_requests: 5}
success_criteria:
  - {type: file_contains, path: out.txt, includes: ['#7 fix the flaky test'], description: the mock answered}
  - {type: cli_called, tool: gh, argv: {positional: [pr, list]}, description: the controller recorded the call}
`
	files := map[string]string{"gh.yaml": "version: 1\nresponses:\n  - argv: [pr, list]\n    stdout: \"#7 fix the flaky test\\n\"\n"}
	kres, err := kubeRun(t, k, kubeTask(t, doc, files), Options{})
	if err != nil {
		t.Fatalf("kubernetes: %v", err)
	}
	lres, err := runTask(t, doc, files, Options{})
	if err != nil {
		t.Fatalf("local: %v", err)
	}
	if kres.Status != "SUCCESS" || kres.Status != lres.Status || kres.Score != lres.Score || kres.Mocks == nil || lres.Mocks == nil || kres.Mocks.Stats != lres.Mocks.Stats {
		out, _ := os.ReadFile(filepath.Join(kres.Dir, record.WorkspaceDir, "out.txt"))
		t.Fatalf("kubernetes %s %v %+v mocks %+v (out %q); local %s %v mocks %+v", kres.Status, kres.Score, kres.Criteria, kres.Mocks, out, lres.Status, lres.Score, lres.Mocks)
	}
}

// The real Claude Code CLI in gateway replay mode on the cluster: the model gateway stays
// on the controller (its connections relayed from the Pod's loopback), and the run is the
// one the local backend gives: the same status, score, gateway totals and transcript depth.
func TestKubeRealCLIInReplayMatchesTheLocalBackend(t *testing.T) {
	k := kubeTestOptions(t)
	node, nctx := kubetest.NodeContainerd(t)
	if _, err := images.BuildAgent(nctx, node, images.AgentOptions{}); err != nil {
		t.Fatalf("the agent image into the node: %v", err)
	}
	tk, _ := loadExample(t, "claude-code")
	secret := "sk-ant-api03-" + canary(t)
	env := map[string]string{"ANTHROPIC_API_KEY": secret, "PATH": os.Getenv("PATH")}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	kres, err := kubeRun(t, k, tk, Options{LookupEnv: lookup})
	if err != nil {
		t.Fatalf("kubernetes: %v", err)
	}
	c, ctx := withAgentImage(t)
	lres, err := runLoaded(t, ctx, c, tk, Options{LookupEnv: lookup})
	if err != nil {
		t.Fatalf("local: %v", err)
	}
	kg, lg := kres.Gateway, lres.Gateway
	if kres.Status != "SUCCESS" || kres.Status != lres.Status || kres.Score != lres.Score || kg == nil || lg == nil ||
		kg.Turns != lg.Turns || kg.InputTokens != lg.InputTokens || kg.OutputTokens != lg.OutputTokens || kg.ReplayMisses != 0 {
		stderr, _ := os.ReadFile(filepath.Join(kres.Dir, record.StderrFile))
		t.Fatalf("kubernetes %s %v %+v gateway %+v (error %q, limits %v, stopped by %q); local %s %v gateway %+v\nstderr:\n%s", kres.Status, kres.Score, kres.Criteria, kg, kres.Error, kres.LimitsHit, kres.Agent.StoppedBy, lres.Status, lres.Score, lg, tail(stderr))
	}
	// Nothing the agent could write holds the key: its logs and workspace.
	for _, f := range []string{record.StdoutFile, record.StderrFile} {
		if b, _ := os.ReadFile(filepath.Join(kres.Dir, f)); strings.Contains(string(b), secret) {
			t.Errorf("%s holds the provider key", f)
		}
	}
}

// kube/rbac.yaml is all a controller needs: with only its roles (the API server checks
// them, impersonating the ServiceAccount), the hello example runs end to end on the cluster
// and what gc needs works too.
func TestKubeRBACManifestIsEnough(t *testing.T) {
	k := kubeTestOptions(t)
	admin := k.Cluster
	ctx := context.Background()
	// The manifest, in the test's namespace, its cluster-wide names made the test's own.
	data, err := os.ReadFile("../kube/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.ReplaceAll(string(data), "ceval-runs", k.Namespace)
	doc = strings.ReplaceAll(doc, "name: ceval-controller-nodes", "name: "+k.Namespace+"-nodes")
	doc = strings.ReplaceAll(doc, "name: ceval-controller-apiserver-service", "name: "+k.Namespace+"-apiserver")
	applyManifest(t, admin, doc)

	// ceval's client impersonates it as a kubeconfig with "as:" says (kubectl's --as).
	user := "system:serviceaccount:" + k.Namespace + ":ceval-controller"
	var kc map[string]any
	raw, err := os.ReadFile(admin.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &kc); err != nil {
		t.Fatal(err)
	}
	for _, u := range kc["users"].([]any) {
		u.(map[string]any)["user"].(map[string]any)["as"] = user
	}
	raw, err = yaml.Marshal(kc)
	if err != nil {
		t.Fatal(err)
	}
	saConfig := filepath.Join(t.TempDir(), "sa.kubeconfig")
	if err := os.WriteFile(saConfig, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if k.Cluster, err = kube.Connect(ctx, saConfig); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", admin.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// ceval's client too is refused outside the roles.
	if _, err := k.Cluster.Controllers(ctx, "default"); err == nil {
		t.Fatal("ceval's client, as the ServiceAccount, lists Pods outside its namespace")
	}
	// Without the roles the impersonated identity may do nothing: the test proves something.
	if _, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("the ServiceAccount lists Pods outside its namespace")
	}
	if _, err := cs.CoreV1().Secrets(k.Namespace).List(ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("the ServiceAccount lists Secrets")
	}
	if _, err := k.Cluster.ProbeTargets(ctx); err != nil {
		t.Fatal(err)
	}
	if probes, _ := k.Cluster.ProbeTargets(ctx); len(probes) < 3 {
		t.Errorf("probe targets %v: want the kubeconfig's address, the service and the kubelet (the roles allow reading them)", probes)
	}
	if _, err := k.Cluster.UserNamespaces(ctx); err != nil {
		t.Fatalf("user namespaces: %v", err)
	}
	tk, err := task.Load("../examples/hello/task.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := kubeRun(t, k, tk, Options{Executor: wasmExecutor(t)})
	if err != nil || res.Status != "SUCCESS" {
		t.Fatalf("as the ServiceAccount: %v %+v", err, res)
	}
	if _, err := k.Cluster.Controllers(ctx, k.Namespace); err != nil {
		t.Fatalf("gc's listing: %v", err)
	}
	if _, err := k.Cluster.Collect(ctx, k.Namespace, k.Controller); err != nil {
		t.Fatalf("gc's deletion: %v", err)
	}
}

// applyManifest creates every object of a multi-document manifest (its Namespace excepted:
// the test has its own) and deletes the cluster-wide ones at the end of the test.
func applyManifest(t *testing.T, c *kube.Cluster, doc string) {
	t.Helper()
	ctx := context.Background()
	for _, part := range strings.Split(doc, "\n---\n") {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(part), nil, nil)
		if err != nil {
			t.Fatalf("decode %q: %v", part, err)
		}
		rb := kubetest.Clientset(t, c).RbacV1()
		switch o := obj.(type) {
		case *corev1.Namespace:
		case *corev1.ServiceAccount:
			_, err = kubetest.Clientset(t, c).CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = rb.Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
			if o.Namespace != "" && o.Namespace != "default" {
				break
			}
			t.Cleanup(func() { _ = rb.Roles(o.Namespace).Delete(ctx, o.Name, metav1.DeleteOptions{}) })
		case *rbacv1.RoleBinding:
			_, err = rb.RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
			if o.Namespace == "default" {
				t.Cleanup(func() { _ = rb.RoleBindings(o.Namespace).Delete(ctx, o.Name, metav1.DeleteOptions{}) })
			}
		case *rbacv1.ClusterRole:
			_, err = rb.ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
			t.Cleanup(func() { _ = rb.ClusterRoles().Delete(ctx, o.Name, metav1.DeleteOptions{}) })
		case *rbacv1.ClusterRoleBinding:
			_, err = rb.ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
			t.Cleanup(func() { _ = rb.ClusterRoleBindings().Delete(ctx, o.Name, metav1.DeleteOptions{}) })
		default:
			t.Fatalf("unexpected object %T in the manifest", obj)
		}
		if err != nil {
			t.Fatalf("create %T: %v", obj, err)
		}
	}
}

// The agent shares the init's UID, so it may signal it: signals the Go runtime would die of
// (SIGABRT, SIGTRAP, SIGSYS, SIGSEGV sent by kill) leave the init running, and the run is
// graded as the agent left it, never an ERROR the agent chose.
func TestKubeAgentSignallingTheInitChangesNothing(t *testing.T) {
	k := kubeTestOptions(t)
	tk := kubeTask(t, `task_id: kube-signal-init
initial_prompt: x
agent: {type: command, command: [sh, -c, 'for s in ABRT TRAP SYS SEGV BUS FPE ILL QUIT TSTP TTIN TTOU XCPU XFSZ; do kill -$s 1; done; sleep 1; echo ok > /workspace/done']}
sandbox: {limits: {timeout: 60s}}
success_criteria: [{type: file_exists, path: done}]
`, nil)
	res, err := kubeRun(t, k, tk, Options{})
	if err != nil || res.Status != "SUCCESS" {
		t.Fatalf("status %v, %v: want SUCCESS (the init survived its agent's signals)", res.Status, err)
	}
}

// The kubelet bind-mounts a world-writable node file at /dev/termination-log, outside every
// volume limit: the agent's RLIMIT_FSIZE (its disk limit) bounds it, and the workspace's
// memory-backed volume holds its size at every write.
func TestKubeAgentCannotWritePastItsDiskLimit(t *testing.T) {
	k := kubeTestOptions(t)
	tk := kubeTask(t, `task_id: kube-disk
initial_prompt: x
agent: {type: command, command: [sh, -c, 'dd if=/dev/zero of=/dev/termination-log bs=1M count=40 2>/dev/null; wc -c < /dev/termination-log > /workspace/termlog; dd if=/dev/zero of=/workspace/big bs=1M count=40 2>/dev/null; n=$(wc -c < /workspace/big); rm /workspace/big; echo $n > /workspace/big.size; echo ok > /workspace/done']}
sandbox: {limits: {timeout: 60s, disk_mb: 16, memory_mb: 256}}
success_criteria: [{type: file_exists, path: done}]
`, nil)
	res, err := kubeRun(t, k, tk, Options{})
	if err != nil || !res.Complete {
		t.Fatalf("%v %+v", err, res)
	}
	for _, f := range []string{"termlog", "big.size"} {
		b, err := os.ReadFile(filepath.Join(res.Dir, record.WorkspaceDir, f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var n int64
		if _, err := fmt.Sscan(string(b), &n); err != nil || n > 16<<20 {
			t.Errorf("%s: the agent wrote %q bytes, past its 16 MiB disk limit", f, b)
		}
	}
}
