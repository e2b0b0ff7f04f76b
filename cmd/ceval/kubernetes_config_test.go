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
