package main

import (
	"strings"
	"testing"
)

// kubernetes.image_pull_secrets names Secrets: anything else is refused with the field's name.
func TestKubernetesImagePullSecretsAreSecretNames(t *testing.T) {
	if err := checkBackendConfig(backendKubernetes, &kubeConfig{ImagePullSecrets: []string{"regcred", "mirror.example"}}); err != nil {
		t.Errorf("valid secret names refused: %v", err)
	}
	for _, bad := range []string{"", "RegCred", "a/b", strings.Repeat("a", 254)} {
		err := checkBackendConfig(backendKubernetes, &kubeConfig{ImagePullSecrets: []string{bad}})
		if err == nil || !strings.Contains(err.Error(), "kubernetes.image_pull_secrets") {
			t.Errorf("secret name %q: %v, want an error naming kubernetes.image_pull_secrets", bad, err)
		}
	}
}

// kubernetes.registry and kubernetes.images are checked with their keys named; a mapping
// makes IfNotPresent the pull policy, and Never with a mapping is refused (the nodes would
// never pull what ceval images push --kubernetes pushed).
func TestKubernetesRegistryMappingIsCheckedAndPulls(t *testing.T) {
	ok := &kubeConfig{Registry: "reg.example:5000/ceval", Images: map[string]string{"ceval.local/agent:latest": "reg.example/agents/cc:1"}}
	if err := checkBackendConfig(backendKubernetes, ok); err != nil {
		t.Errorf("a valid mapping refused: %v", err)
	}
	if p := ok.pullPolicy(); p != "IfNotPresent" {
		t.Errorf("pull policy with a mapping: %s, want IfNotPresent", p)
	}
	if p := (kubeConfig{}).pullPolicy(); p != "Never" {
		t.Errorf("pull policy without a mapping: %s, want Never", p)
	}
	if p := (kubeConfig{Registry: "reg.example/c", ImagePullPolicy: "Always"}).pullPolicy(); p != "Always" {
		t.Errorf("pull policy Always with a mapping: %s", p)
	}
	for _, c := range []struct {
		k    kubeConfig
		want string
	}{
		{kubeConfig{Registry: "reg.example/c", ImagePullPolicy: "Never"}, "image_pull_policy Never with kubernetes.registry"},
		{kubeConfig{Registry: "reg.example/c:v1"}, "kubernetes.registry"},
		{kubeConfig{Images: map[string]string{"ubuntu:24.04": "reg.example/u:1"}}, "kubernetes.images"},
	} {
		if err := checkBackendConfig(backendKubernetes, &c.k); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.k, err, c.want)
		}
	}
}
