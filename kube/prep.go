package kube

import (
	"context"
	"encoding/base64"
	"fmt"
	"path"
	"strconv"
	"strings"

	"ceval.dev/ceval/oci"
)

// PrepContainerName is the init container that runs ceval's static busybox (from the ceval
// volume) in the agent's own image, as hardened as the agent's container, before it: in the
// image's working directory and with the image's own environment (the Pod spec gives it
// none), it copies that directory into the workspace volume when the run asks (the image's
// files, as a local run copies them), each output's path of the image into that output's
// volume when asked, and reports the image's working directory and environment in its
// termination message (PrepReport), which the controller reads from the Pod's status before
// the agent starts. The node resolved the image: nothing of it is read on the controller.
const PrepContainerName = "ceval-prep"

// prepDir is where the prep container sees the volumes it fills.
const prepDir = "/.ceval-prep"

// prepScript runs under busybox sh: $1 is "copy" to copy the working directory, the rest
// are the output paths to copy from the image (in the volumes' order, "-" for one not to
// copy). Copies are busybox cp -R (links copied as links, never followed; run as the
// agent's UID, so the files are the agent's); what fails is reported, never dropped. The
// report is KEY VALUE lines ending in "end", so a cut message is told from a whole one.
const prepScript = `b=` + CevalDir + `/busybox
env=$($b base64 -w0 /proc/$$/environ)
wd=$PWD
errs=
if [ "$1" = copy ] && [ "$wd" != / ]; then
  e=$($b cp -R . ` + prepDir + `/ws/ 2>&1) || errs="$errs workdir: $e;"
fi
shift
i=0
for p in "$@"; do
  if [ "$p" != - ] && [ -d "$p" ] && [ ! -L "$p" ]; then
    e=$(cd "$p" && $b cp -R . ` + prepDir + `/out/$i/ 2>&1) || errs="$errs output $p: $e;"
  fi
  i=$((i+1))
done
errs=$(printf %s "$errs" | $b tr '\n' ' ' | $b head -c 1200)
printf 'wd %s\nenv %s\nerr %s\nend\n' "$wd" "$env" "$errs" >/dev/termination-log
`

// outputVolume names output i's volume.
func outputVolume(i int) string { return "out-" + strconv.Itoa(i) }

// validateOutputs checks the outputs' paths: clean, absolute, each once, outside the Pod's
// own mount points (/tmp is allowed: its volume then replaces the Pod's /tmp).
func (cfg Config) validateOutputs() error {
	seen := map[string]bool{}
	for i, p := range cfg.Outputs {
		if !path.IsAbs(p) || path.Clean(p) != p || p == "/" || strings.ContainsAny(p, "\x00:\n") {
			return fmt.Errorf("outputs[%d] %q: want a clean absolute path", i, p)
		}
		if seen[p] {
			return fmt.Errorf("outputs[%d]: %s twice", i, p)
		}
		seen[p] = true
		for _, r := range reserved {
			if r == oci.TmpPath && p == r {
				continue
			}
			if p == r || strings.HasPrefix(p, r+"/") || strings.HasPrefix(r, p+"/") {
				return fmt.Errorf("outputs[%d] %s: meets %s, which the Pod mounts itself", i, p, r)
			}
		}
	}
	return nil
}

// prepContainer is PrepContainerName's spec (see Pod).
func (cfg Config) prepContainer(sec *SecurityContext, limits ResourceList) Container {
	args := []string{CevalDir + "/busybox", "sh", "-c", prepScript, "ceval-prep"}
	if cfg.CopyWorkdir {
		args = append(args, "copy")
	} else {
		args = append(args, "-")
	}
	mounts := []VolumeMount{
		{Name: "ceval", MountPath: CevalDir, ReadOnly: true},
		{Name: "workspace", MountPath: prepDir + "/ws"},
	}
	for i, p := range cfg.Outputs {
		if cfg.OutputsFromImage {
			args = append(args, p)
		} else {
			args = append(args, "-")
		}
		mounts = append(mounts, VolumeMount{Name: outputVolume(i), MountPath: prepDir + "/out/" + strconv.Itoa(i)})
	}
	return Container{
		Name:            PrepContainerName,
		Image:           cfg.Image,
		ImagePullPolicy: cfg.PullPolicy,
		Command:         args,
		// No WorkingDir and no Env: the image's own are what it reports.
		Resources:                ResourceRequirements{Limits: limits, Requests: limits},
		SecurityContext:          sec,
		VolumeMounts:             mounts,
		TerminationMessagePolicy: TerminationMessageReadFile,
	}
}

// PrepReport is what the prep container found in the agent's image.
type PrepReport struct {
	Workdir string   // the image's working directory ("/" when it names none)
	Env     []string // the container's environment: the image's ENV and what the node adds
	Errors  string   // copies that failed, with busybox's words; "" when none did
}

// nodeEnv are variables the kubelet and the runtime give every container, not the image's.
func nodeEnv(kv string) bool {
	k, _, _ := strings.Cut(kv, "=")
	return k == "HOSTNAME" || strings.HasPrefix(k, "KUBERNETES_")
}

// ParsePrepReport reads the prep container's termination message; the node's own
// variables (HOSTNAME, KUBERNETES_*) are left out of Env.
func ParsePrepReport(msg string) (*PrepReport, error) {
	if !strings.HasSuffix(msg, "\nend\n") {
		return nil, fmt.Errorf("the prep container's report is cut or missing (%d bytes; the image's environment may be over the 4096 bytes a termination message holds)", len(msg))
	}
	r := &PrepReport{}
	for _, line := range strings.Split(strings.TrimSuffix(msg, "end\n"), "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "wd":
			r.Workdir = v
		case "env":
			raw, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				return nil, fmt.Errorf("the prep container's report: env: %w", err)
			}
			for _, kv := range strings.Split(string(raw), "\x00") {
				if kv != "" && !nodeEnv(kv) {
					r.Env = append(r.Env, kv)
				}
			}
		case "err":
			r.Errors = strings.TrimSpace(v)
		}
	}
	return r, nil
}

// PrepReport reads the prep container's report from the Pod's status: nil when the Pod has
// no prep container.
func (r *Run) PrepReport(ctx context.Context) (*PrepReport, error) {
	p, err := r.get(ctx)
	if err != nil {
		return nil, err
	}
	for _, cs := range p.Status.InitContainerStatuses {
		if cs.Name != PrepContainerName {
			continue
		}
		if cs.State.Terminated == nil {
			return nil, fmt.Errorf("the prep container has not ended")
		}
		return ParsePrepReport(cs.State.Terminated.Message)
	}
	return nil, nil
}
