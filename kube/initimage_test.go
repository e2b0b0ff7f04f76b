package kube_test

import (
	"slices"
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/kube"
)

// The install container's command and mount are written against the init image package
// images builds: a path renamed on one side only would leave the agent without its init.
func TestInstallContainerMatchesTheInitImageLayout(t *testing.T) {
	p, err := kube.Config{RunID: "r1", Controller: "c", Namespace: "ns", Image: "img", InitImage: images.InitName()}.Pod()
	if err != nil {
		t.Fatal(err)
	}
	c := p.Spec.InitContainers[0]
	want := []string{images.InitBusybox, "cp", images.InitBinaryPath, images.MockBinaryPath, images.InitBusybox, images.InitVolumePath + "/"}
	if !slices.Equal(c.Command, want) || c.VolumeMounts[0].MountPath != images.InitVolumePath {
		t.Errorf("install command %q at %s, want %q at %s", c.Command, c.VolumeMounts[0].MountPath, want, images.InitVolumePath)
	}
	if "/"+kube.InitFile != images.InitBinaryPath || "/"+kube.MockFile != images.MockBinaryPath {
		t.Errorf("volume files %s, %s; image paths %s, %s", kube.InitFile, kube.MockFile, images.InitBinaryPath, images.MockBinaryPath)
	}
}
