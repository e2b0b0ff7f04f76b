// Package report turns an experiment's run directories into what people and CI read:
// summary.json (pass rates, pass@k, Wilson and task-clustered intervals, statuses), junit.xml and
// report.html (self-contained, script-free, agent text escaped), and strips terminal control
// sequences from agent text. It compares a run with a baseline (Compare: per variant and
// task, with intervals and family-wise verdicts) and renders Markdown summaries with run data
// quoted inert. It reads result files at exact paths from plan.json and never runs or grades
// anything.
package report
