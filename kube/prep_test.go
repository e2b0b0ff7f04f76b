package kube

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"
)

// The prep container runs ceval's busybox (never the image's programs) in the agent's image,
// hardened as the agent's container, with no environment or working directory of the
// spec's (it reports the image's own), seeing only the ceval volume (read-only), the
// workspace and the outputs' volumes; the outputs are the agent's writable paths, /tmp's
// replacing the Pod's own.
func TestPodPrepContainerRunsCevalsBusyboxInTheAgentsImage(t *testing.T) {
	cfg := testConfig()
	cfg.Prep, cfg.CopyWorkdir, cfg.OutputsFromImage, cfg.Outputs = true, true, true, []string{"/data", "/tmp"}
	p := mustPod(t, cfg)
	if len(p.Spec.InitContainers) != 2 {
		t.Fatalf("init containers %d, want install and prep", len(p.Spec.InitContainers))
	}
	prep, agent := p.Spec.InitContainers[1], p.Spec.Containers[0]
	if prep.Name != PrepContainerName || prep.Image != cfg.Image || prep.Command[0] != CevalDir+"/busybox" || len(prep.Env) != 0 || prep.WorkingDir != "" {
		t.Errorf("prep container %s image %s command %q env %v dir %q", prep.Name, prep.Image, prep.Command, prep.Env, prep.WorkingDir)
	}
	if got := prep.Command[len(prep.Command)-3:]; !slices.Equal(got, []string{"copy", "/data", "/tmp"}) {
		t.Errorf("prep arguments %q", got)
	}
	sc := prep.SecurityContext
	if sc == nil || *sc.RunAsUser != 2000 || *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("prep security context %+v", sc)
	}
	for _, m := range prep.VolumeMounts {
		if m.Name == "ceval" && !m.ReadOnly || m.Name == "home" || m.Name == "run" || m.Name == "tmp" {
			t.Errorf("prep mounts %s at %s (read-only %v)", m.Name, m.MountPath, m.ReadOnly)
		}
	}
	at := map[string]string{}
	for _, m := range agent.VolumeMounts {
		at[m.MountPath] = m.Name
	}
	if at["/data"] != "out-0" || at["/tmp"] != "out-1" {
		t.Errorf("agent mounts %v: want the outputs' volumes at /data and /tmp", at)
	}
	cfg.Outputs = []string{"/workspace/x"}
	if _, err := cfg.Pod(); err == nil || !strings.Contains(err.Error(), "outputs[0]") {
		t.Errorf("an output inside /workspace: %v", err)
	}
	cfg = testConfig()
	cfg.CopyWorkdir = true
	if _, err := cfg.Pod(); err == nil {
		t.Error("a copy without the prep container was accepted")
	}
	if p := mustPod(t, testConfig()); len(p.Spec.InitContainers) != 1 || p.Spec.Containers[0].VolumeMounts[len(p.Spec.Containers[0].VolumeMounts)-1].MountPath != "/tmp" {
		t.Errorf("without prep or outputs: %d init containers", len(p.Spec.InitContainers))
	}
}

// The report keeps the image's variables (the node's own left out), its working directory
// and the copies' errors; a report without its end (cut at the 4096 bytes of a termination
// message) is refused.
func TestPrepReportIsParsedAndACutOneRefused(t *testing.T) {
	env := base64.StdEncoding.EncodeToString([]byte("PATH=/app/bin:/bin\x00FOO=a b\x00HOSTNAME=pod\x00KUBERNETES_SERVICE_HOST=10.96.0.1\x00"))
	r, err := ParsePrepReport("wd /app\nenv " + env + "\nerr  workdir: cp: can't open 'x': Permission denied;\nend\n")
	if err != nil {
		t.Fatal(err)
	}
	if r.Workdir != "/app" || !slices.Equal(r.Env, []string{"PATH=/app/bin:/bin", "FOO=a b"}) || !strings.Contains(r.Errors, "Permission denied") {
		t.Errorf("report %+v", r)
	}
	if _, err := ParsePrepReport("wd /app\nenv " + env[:10]); err == nil || !strings.Contains(err.Error(), "cut") {
		t.Errorf("a cut report: %v", err)
	}
}
