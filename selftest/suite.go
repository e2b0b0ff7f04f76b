package selftest

import (
	"crypto/rand"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox/kubernetes"
	"go.yaml.in/yaml/v3"
)

// suite is the attack suite as it ships: attacks/NAME/{task.yaml,attack.sh,reference/...}
// and lib.sh, which every attack script sources.
//
//go:embed lib.sh attacks
var suite embed.FS

// Placeholders substituted when an attack is written out for a run. The canary goes into
// the grading material only (the task file and the reference); scripts get the task's host
// directory, because an attacker may well know where tasks live on the host.
const (
	canaryPlaceholder  = "{{CANARY}}"
	taskDirPlaceholder = "{{TASK_DIR}}"
)

// canaryPrefix starts every canary; attack scripts search for it (assembling it at run
// time, so their own text never matches) and the criteria want the whole random value.
const canaryPrefix = "CEVAL-" + "CANARY-"

// Attack is one attack of the suite.
type Attack struct {
	Name  string // the task_id, also the directory under attacks/
	Tried string // the task's description: what the attack tries
	Needs string // a host tool its preparation needs ("git"), "" for none
	// loader is set for an attack on task loading itself (see loader.go): no agent runs.
	loader *loaderAttack
}

// setup is what an attack needs beyond the files the suite ships: host-side preparation of
// its template directory (attack.sh and lib.sh are copied by materialize afterwards),
// ceval's own environment for the run, an expected refusal, and a check of the result.
type setup struct {
	needs string
	run   func(templateDir, canary string) error // nil: nothing to prepare
	// env is ceval's own environment for the run on top of the host's (Options.LookupEnv),
	// with {{CANARY}} substituted: a real-looking credential the agent must never see.
	env map[string]string
	// provider starts a fake model provider on the host for the run, named to the gateway
	// by CEVAL_ANTHROPIC_BASE_URL; the row is an error unless it was sent env's
	// ANTHROPIC_API_KEY (the key was really in use) and a breach if that key is in any
	// file of the run directory.
	provider bool
	// judge starts a stub judge model on the host's loopback (judgeStub) and gives the
	// run a live judge that asks it; the row is an error unless the stub refused a request
	// as over its context (the attack reached the model's limit).
	judge bool
	// refused, when set, says the run must be refused before the agent starts with an
	// input error holding this text; the row is blocked then, and a run that goes ahead
	// is a breach.
	refused string
	// check looks at a finished run for what the criteria cannot see (gateway totals, say);
	// a non-empty answer is a breach.
	check func(res *record.Result) string
	// race, when set, is the task author racing ceval: called with each event of the run
	// (the task is validated by then) and the task's directory; it says when it has done
	// all it meant to (see swapSetup). A race left undone is an error row.
	race func(event, taskDir, canary string) (done bool, err error)
	// probe says the task runs in ProbeImage (its task.yaml names it), which the run builds
	// first; --image does not replace it, since another image lacks the probe.
	probe bool
	// kube, when set, says why the attack does not apply on the kubernetes backend (it
	// attacks a mechanism of the local sandbox that a Pod does differently, tested there
	// by the test it names); the row is skipped with this reason.
	kube func(o *kubernetes.Options) string
	// registry runs the attack's task with a Pinner (pull missing) against hostileRegistry,
	// whose host replaces {{REGISTRY}}; any request its redirect made to the host's service
	// is a breach.
	registry bool
	// rootful, when set, says why the attack does not apply on a rootless containerd (a
	// mechanism only a rootful one has, documented as such); the row is skipped with it.
	rootful string
}

// setups is the extension point for attacks that need more than their attacks/NAME files,
// keyed by attack name: git histories, the model gateway's environment and checks, the
// plugin source that must be refused, the probe image, and a hostile task author's host
// repositories and material swapped mid-run.
var setups = map[string]setup{
	"git-later-commit": gitSetup("later-commit"),
	"git-other-branch": gitSetup("other-branch"),
	"git-tag":          gitSetup("tag"),
	"git-nested-repo":  gitSetup("nested"),
	"git-reflog":       gitSetup("reflog"),
	"git-stash":        gitSetup("stash"),

	"judge-over-context":      {judge: true},
	"gateway-real-key":        {env: map[string]string{"ANTHROPIC_API_KEY": "sk-ant-api03-" + canaryPlaceholder}, provider: true},
	"gateway-other-endpoints": {check: checkGatewayRefusedEndpoints},
	"gateway-forged-usage":    {check: checkGatewayUsage},
	// Issue 14, parts 1 and 7: model-call failures the agent provokes, and what is forwarded.
	"gateway-exit-mid-call":    gatewayProvider,
	"gateway-timeout-mid-call": gatewayProvider,
	"gateway-provoked-4xx":     gatewayProvider,
	"gateway-premium-options":  gatewayProvider,
	"gateway-echoed-key":       gatewayProvider,
	"plugin-source-grading":    {refused: "denied by"},
	"plugin-write-tree":        {check: checkPluginUnchanged},

	// Issue 32, item 6: what the allowlist refuses, nested deeper than its paths.
	"gateway-nested-content": gatewayProvider,

	"kernel-syscalls": {probe: true},
	// Issue 32, item 3: the verifier runs tests/test.sh with the probe image's bash.
	"verifier-harbor-reward": {probe: true},

	// What a Pod does differently from the local sandbox (docs/kubernetes.md).
	"agent-judge-codex-forgery": {kube: func(*kubernetes.Options) string {
		return "the kubernetes backend refuses " + kubernetes.CodexJudgeRefusal
	}},
	"survive-supervisor-death": {kube: func(*kubernetes.Options) string {
		return "the local init's supervisor FIFO; a Pod's init kills everything when its control connection to ceval drops (TestKubeKill9ThenGCLeavesNothing, TestLostControlConnectionKillsEverythingAndExits123)"
	}},
	"escape-host-mounts": {kube: func(*kubernetes.Options) string {
		return "the kubelet mounts /etc/hosts, /etc/hostname, /etc/resolv.conf (root's, read-only to the agent), the container's cgroups (read-only) and /dev/termination-log (writable, bounded by the agent's RLIMIT_FSIZE: TestKubeAgentCannotWritePastItsDiskLimit) into every Pod"
	}},
	"fill-output": {kube: func(*kubernetes.Options) string {
		return "a Pod's output volume is a memory-backed emptyDir whose size the kernel holds (TestKubeRunsFromTheImagesFilesEnvAndOutputs writes past it) but whose file count a Pod spec cannot cap, as the Pod's /workspace: its files are bounded by the Pod's memory limit (tmpfs inodes are charged to its cgroup) and the copy-out by the snapshot's entry cap, applied by the init at the source"
	}},
	"quota-shared-uid": {kube: func(o *kubernetes.Options) string {
		if o.UserNamespaces {
			return ""
		}
		return "the cluster's nodes do not support user namespaces (hostUsers: false), so its Pods' agents share host UID 2000 and its per-UID kernel quotas; ceval asks for them where every node supports them"
	}},

	"author-git-host-objects":    hostRepoSetup("objects", "is a symlink to"),
	"author-git-host-alternates": hostRepoSetup("alternates", "names other object stores"),
	"author-material-swap": swapSetup(map[string][]string{
		"run_started": {"kit"}, "plugin_verified": {"calls.jsonl"}, "agent_exited": {"reference"}}),
	"author-hostile-wheel": {refused: "installs a .pth file (evil_hook.pth)"},
	"author-service-hostnet": {refused: "service bridge asks for network: host", kube: func(*kubernetes.Options) string {
		return "the kubernetes backend refuses tasks with services (CheckKubernetes)"
	}},
	"author-hostile-registry": {registry: true, refused: "redirected to another host", kube: func(*kubernetes.Options) string {
		return "a Pod's images are pulled by its node's containerd, not by ceval"
	}},
	"fool-oversize-hidden-todo": {check: checkLimitsHitNames("snapshot per-file cap")},
	"fool-entry-cap-hides-file": {check: checkLimitsHitNames("snapshot entry cap")},
	"fool-path-shape":           {check: checkPathShapeBounded},
	"steps-break-after-agent":   {check: checkStepsHeld},
	"steps-files-symlink": {check: checkTaskStepsRan, kube: func(*kubernetes.Options) string {
		return "the kubernetes backend refuses multi-step tasks (CheckKubernetes)"
	}},
	"service-agent-attacks": {check: checkServicesSurvived, kube: func(*kubernetes.Options) string {
		return "the kubernetes backend refuses tasks with services (CheckKubernetes)"
	}},
	"service-mcp-stdio": {check: checkServicesSurvived, kube: func(*kubernetes.Options) string {
		return "the kubernetes backend refuses tasks with services (CheckKubernetes)"
	}},
}

// gatewayProvider runs an attack against the fake provider with a real-looking key.
var gatewayProvider = setup{env: map[string]string{"ANTHROPIC_API_KEY": "sk-ant-api03-" + canaryPlaceholder}, provider: true}

// Attacks lists the suite in name order.
func Attacks() ([]Attack, error) {
	dirs, err := fs.ReadDir(suite, "attacks")
	if err != nil {
		return nil, err
	}
	var out []Attack
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		data, err := suite.ReadFile(path.Join("attacks", d.Name(), "task.yaml"))
		if err != nil {
			return nil, err
		}
		var head struct {
			ID          string `yaml:"task_id"`
			Description string `yaml:"description"`
		}
		if err := yaml.Unmarshal(data, &head); err != nil {
			return nil, fmt.Errorf("attack %s: %w", d.Name(), err)
		}
		if head.ID != d.Name() {
			return nil, fmt.Errorf("attack %s: task_id is %q, want the directory name", d.Name(), head.ID)
		}
		out = append(out, Attack{Name: d.Name(), Tried: head.Description, Needs: setups[d.Name()].needs})
	}
	for i := range loaderAttacks {
		out = append(out, Attack{Name: loaderAttacks[i].name, Tried: loaderAttacks[i].tried, loader: &loaderAttacks[i]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// UnknownAttackError names attacks that --only asked for and the suite lacks.
type UnknownAttackError struct{ Names []string }

func (e *UnknownAttackError) Error() string {
	return fmt.Sprintf("no such attack: %s (ceval selftest --json lists them)", strings.Join(e.Names, ", "))
}

// Select returns the attacks named (all of them when names is empty), in suite order.
func Select(names []string) ([]Attack, error) {
	all, err := Attacks()
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return all, nil
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []Attack
	for _, a := range all {
		if want[a.Name] {
			out = append(out, a)
			delete(want, a.Name)
		}
	}
	if len(want) > 0 {
		var unknown []string
		for n := range want {
			unknown = append(unknown, n)
		}
		sort.Strings(unknown)
		return nil, &UnknownAttackError{unknown}
	}
	return out, nil
}

// NewCanary returns a fresh random canary. The suite ships inside the binary, which an agent
// may be able to read, so the secret part exists only for one run.
func NewCanary() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return canaryPrefix + hex.EncodeToString(b[:])
}

// materialize writes attack a as an ordinary task directory at dir (which must not exist):
// task.yaml and reference/ with the canary substituted, reference/canary.txt, and
// template/ holding attack.sh and lib.sh (after the attack's setup, if it has one).
func materialize(a Attack, dir, canary string) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	src := path.Join("attacks", a.Name)
	regHost := ""
	if setups[a.Name].registry {
		regHost = hostileRegistry().host
	}
	subst := strings.NewReplacer(canaryPlaceholder, canary, taskDirPlaceholder, dir, probeImagePlaceholder, ProbeImage(), registryPlaceholder, regHost)
	err := fs.WalkDir(suite, src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, src), "/")
		if rel == "" || rel == "attack.sh" {
			return nil
		}
		dst := filepath.Join(dir, filepath.FromSlash(rel))
		if d.IsDir() {
			return os.Mkdir(dst, 0o700)
		}
		data, err := suite.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, []byte(subst.Replace(string(data))), 0o600)
	})
	if err != nil {
		return err
	}
	ref := filepath.Join(dir, "reference")
	if err := os.MkdirAll(ref, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(ref, "canary.txt"), []byte(canary+"\n"), 0o600); err != nil {
		return err
	}
	tmpl := filepath.Join(dir, "template")
	if err := os.Mkdir(tmpl, 0o755); err != nil {
		return err
	}
	if s, ok := setups[a.Name]; ok && s.run != nil {
		if err := s.run(tmpl, canary); err != nil {
			return fmt.Errorf("attack %s: setup: %w", a.Name, err)
		}
	}
	script, err := suite.ReadFile(path.Join(src, "attack.sh"))
	if err != nil {
		return err
	}
	if strings.Contains(string(script), canaryPlaceholder) {
		return fmt.Errorf("attack %s: attack.sh must not hold the canary", a.Name)
	}
	lib, err := suite.ReadFile("lib.sh")
	if err != nil {
		return err
	}
	script = []byte(strings.ReplaceAll(string(script), taskDirPlaceholder, dir))
	if err := os.WriteFile(filepath.Join(tmpl, "attack.sh"), script, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(tmpl, "lib.sh"), lib, 0o644)
}
