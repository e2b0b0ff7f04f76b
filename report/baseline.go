package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"ceval.dev/ceval/record"
)

// MaxSummaryBytes bounds a summary.json read as a baseline (a CI artifact, so hostile).
const MaxSummaryBytes = 64 << 20

// ReadSummary reads what Compare compares: a summary.json, or an experiment's directory (its
// summary.json, else a summary of plan.json and the results, as an interrupted run has).
func ReadSummary(path string) (*Summary, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		_, serr := os.Lstat(filepath.Join(path, SummaryFile))
		if _, perr := os.Stat(filepath.Join(path, record.PlanFile)); perr == nil && errors.Is(serr, fs.ErrNotExist) {
			e, err := Load(path)
			if err != nil {
				return nil, err
			}
			return Summarize(e), nil
		}
		path = filepath.Join(path, SummaryFile)
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no summary: give an experiment's run directory (with plan.json or summary.json) or its summary.json", path)
		}
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSummaryBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > MaxSummaryBytes {
		return nil, fmt.Errorf("%s: over %d MiB: not a summary.json", path, MaxSummaryBytes>>20)
	}
	s, err := parseSummary(data)
	if err != nil {
		return nil, fmt.Errorf("%s%w", path, err)
	}
	return s, nil
}

// parseSummary decodes and checks a summary; a decoding error starts with its line (":12: ...").
func parseSummary(data []byte) (*Summary, error) {
	var s Summary
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&s); err != nil {
		off := dec.InputOffset()
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			off = se.Offset
		case errors.As(err, &te):
			off = te.Offset
		}
		return nil, fmt.Errorf(":%d: %w", lineOf(data, off), err)
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf(": %w", err)
	}
	return &s, nil
}

func lineOf(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return 1 + bytes.Count(data[:off], []byte("\n"))
}

// check refuses counts no experiment can produce, which would make the statistics lie.
func (s *Summary) check() error {
	if len(s.Variants) == 0 {
		return errors.New("no variants: not a ceval summary.json")
	}
	var bad func(st Stats) error
	bad = func(st Stats) error {
		if st.Runs < 0 || st.Passed < 0 || st.Passed > st.Runs || st.ScoreSD < 0 || nan(st.MeanScore) || nan(st.ScoreSD) || nan(st.PassRate) {
			return fmt.Errorf("variant %q task %q: impossible counts (runs %d, passed %d, score sd %v)", StripControls(st.VariantID), StripControls(st.TaskID), st.Runs, st.Passed, st.ScoreSD)
		}
		for _, t := range st.Tasks {
			t.VariantID = st.VariantID
			if err := bad(t); err != nil {
				return err
			}
		}
		return nil
	}
	for _, v := range s.Variants {
		if err := bad(v); err != nil {
			return err
		}
	}
	return nil
}

func nan(f float64) bool { return math.IsNaN(f) || math.IsInf(f, 0) }
