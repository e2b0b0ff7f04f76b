package report

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Write streams report.html to its file over the run panels it made once for the runs'
// pages too: the page is byte for byte the one HTML renders in memory, a hostile
// experiment's included.
func TestWriteStreamsTheSamePageHTMLRenders(t *testing.T) {
	for name, dir := range map[string]string{"hostile": hostileExperiment(t)} {
		e, s, err := Write(dir)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, HTMLFile))
		if err != nil {
			t.Fatal(err)
		}
		want, err := HTML(e, s)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) || len(got) == 0 {
			t.Errorf("%s: report.html (%d bytes) is not HTML's page (%d bytes)", name, len(got), len(want))
		}
	}
}
