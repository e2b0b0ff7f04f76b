package sandbox

import (
	"slices"
	"strings"
	"testing"
)

func TestImageEnvKeepsTheImagesVariablesButNotCevalsOrItsChannels(t *testing.T) {
	kept, dropped := ImageEnv([]string{
		"PATH=/app/bin:/usr/local/bin:/application:/app", "FOO=1", "FOO=2", "HOME=/root", "CEVAL_GATEWAY_URL=http://evil",
		"LD_PRELOAD=/x.so", "https_proxy=http://evil:3128", "ANTHROPIC_BASE_URL=http://evil", "bad-key=1", "NOEQUALS",
		"DATA=/app/data.csv",
	}, "/app")
	want := []string{"PATH=/workspace/bin:/usr/local/bin:/application:/workspace", "FOO=2", "DATA=/workspace/data.csv"}
	if !slices.Equal(kept, want) {
		t.Errorf("kept %q, want %q", kept, want)
	}
	for _, k := range []string{"LD_PRELOAD", "https_proxy", "ANTHROPIC_BASE_URL", "bad-key", "NOEQUALS"} {
		if !slices.ContainsFunc(dropped, func(d string) bool { return strings.HasPrefix(d, k) }) {
			t.Errorf("dropped %q does not name %s", dropped, k)
		}
	}
	// ceval's own variables win over the image's.
	got := MergeImageEnv(kept, []string{"FOO=ceval", "CEVAL_TASK_ID=t"})
	if !slices.Equal(got, []string{"PATH=/workspace/bin:/usr/local/bin:/application:/workspace", "DATA=/workspace/data.csv", "FOO=ceval", "CEVAL_TASK_ID=t"}) {
		t.Errorf("merged %q", got)
	}
	if kept, _ := ImageEnv([]string{"PATH=/app/bin"}, ""); !slices.Equal(kept, []string{"PATH=/app/bin"}) {
		t.Errorf("without a copied workdir the value changed: %q", kept)
	}
}

// PrependEnv goes before the image's value (ceval's import guard ahead of an image's own
// PYTHONPATH=/app), sets an unset or empty one, and leaves the image's slice alone.
func TestPrependImageEnvKeepsTheImagesValueBehind(t *testing.T) {
	image := []string{"PYTHONPATH=/workspace/lib:/opt", "EMPTY=", "FOO=1"}
	got := PrependImageEnv(image, []string{"PYTHONPATH=/ceval/python", "EMPTY=/x", "NEW=/y"})
	want := []string{"PYTHONPATH=/ceval/python:/workspace/lib:/opt", "EMPTY=/x", "FOO=1", "NEW=/y"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if image[0] != "PYTHONPATH=/workspace/lib:/opt" {
		t.Errorf("the image's env changed: %q", image)
	}
}
