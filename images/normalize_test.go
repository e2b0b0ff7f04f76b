package images

import "testing"

func TestCheckImageNameNormalises(t *testing.T) {
	for in, want := range map[string]string{
		"ubuntu:24.04":     "docker.io/library/ubuntu:24.04",
		"foo/bar":          "docker.io/foo/bar:latest",
		"localhost:5000/x": "localhost:5000/x:latest",
		"harbor/task":      "docker.io/harbor/task:latest",
		"ceval.local/a:b":  "ceval.local/a:b",
	} {
		n := in
		if err := checkImageName(&n); err != nil {
			t.Fatalf("checkImageName(%q): %v", in, err)
		}
		if n != want {
			t.Errorf("checkImageName(%q) = %q, want %q", in, n, want)
		}
	}
	bad := "ubuntu:24.04:extra"
	if err := checkImageName(&bad); err == nil {
		t.Errorf("checkImageName(%q): no error", bad)
	}
}
