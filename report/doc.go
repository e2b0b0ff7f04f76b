// Package report turns an experiment's run directories into what people and CI read:
// summary.json (pass rates, pass@k, bootstrap intervals, statuses), junit.xml and, from
// them, the terminal's lines. It reads result files at exact paths from plan.json and never
// runs or grades anything.
package report
