package images

import (
	"strings"
	"testing"
)

// ceval's own images map under kubernetes.registry by their path and tag (the init image
// by its repository's last element), single names by kubernetes.images first; a registry
// image is never mapped.
func TestNodeRegistryMapsOnlyCevalsOwnImages(t *testing.T) {
	r := NodeRegistry{Prefix: "reg.example:5000/team/ceval", Images: map[string]string{"ceval.local/agent:latest": "other.example/agents/claude:v3"}}
	for name, want := range map[string]string{
		"ceval.local/default:latest":             "reg.example:5000/team/ceval/default:latest",
		"ceval.local/packages:0123456789abcdef":  "reg.example:5000/team/ceval/packages:0123456789abcdef",
		InitRepo + ":c9ca14c82dc9":               "reg.example:5000/team/ceval/ceval-init:c9ca14c82dc9",
		"ceval.local/agent:latest":               "other.example/agents/claude:v3",
		"ceval.local/import/harbor-task:v1":      "reg.example:5000/team/ceval/import/harbor-task:v1",
		"docker.io/library/ubuntu:24.04":         "",
		"reg.example:5000/team/ceval/default:v1": "",
		"ceval.local/":                           "",
	} {
		got, ok := r.Ref(name)
		if got != want || ok != (want != "") {
			t.Errorf("Ref(%s) = %q, %v; want %q", name, got, ok, want)
		}
	}
	if _, ok := (NodeRegistry{}).Ref(DefaultName); ok {
		t.Error("an empty mapping mapped the default image")
	}
	if err := r.Check(); err != nil {
		t.Errorf("a valid mapping: %v", err)
	}
	for _, bad := range []struct {
		r    NodeRegistry
		want string
	}{
		{NodeRegistry{Prefix: "reg.example/ceval:v1"}, "kubernetes.registry"},
		{NodeRegistry{Prefix: "ceval"}, "names no registry host"},
		{NodeRegistry{Prefix: "Reg.Example/UPPER"}, "kubernetes.registry"},
		{NodeRegistry{Images: map[string]string{"docker.io/library/ubuntu:24.04": "reg.example/u:1"}}, "not one of ceval's images"},
		{NodeRegistry{Images: map[string]string{DefaultName: "ceval.local/other:1"}}, "not a registry reference"},
		{NodeRegistry{Images: map[string]string{DefaultName: "bad ref"}}, "kubernetes.images[" + DefaultName + "]"},
	} {
		if err := bad.r.Check(); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Check(%+v) = %v, want %q", bad.r, err, bad.want)
		}
	}
}
