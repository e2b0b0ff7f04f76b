package report

import (
	"io"
	"path/filepath"

	"ceval.dev/ceval/record"
)

// Write loads an experiment's directory and (re)writes summary.json, junit.xml and
// report.html in it, and each run's transcript.html in its run directory, atomically, from
// the run files alone.
func Write(expDir string) (*Experiment, *Summary, error) {
	e, err := Load(expDir)
	if err != nil {
		return nil, nil, err
	}
	s := Summarize(e)
	if err := record.WriteJSONAtomic(filepath.Join(expDir, SummaryFile), s); err != nil {
		return e, s, err
	}
	j, err := JUnit(e)
	if err != nil {
		return e, s, err
	}
	if err := record.WriteFileAtomic(filepath.Join(expDir, JUnitFile), j, 0o600); err != nil {
		return e, s, err
	}
	// Each run's own page first: the experiment's page links to them. Both pages of a run
	// show its panel, made once; the experiment's page is streamed to its file (megabytes
	// at 1,000 runs, never held whole).
	panels := make([]runPanel, len(e.Runs))
	for i, r := range e.Runs {
		panels[i] = panelFor(expDir, i, r)
	}
	if err := writeTranscripts(e, panels); err != nil {
		return e, s, err
	}
	return e, s, record.WriteAtomic(filepath.Join(expDir, HTMLFile), 0o600, func(w io.Writer) error {
		return writeHTML(w, e, s, panels)
	})
}
