// Package task loads task and experiment files (an experiment's tasks, defaults, variants,
// prompt mutations and -D overrides merged into tasks): the strict YAML schema, validation
// that reports every problem as FILE:LINE:COL, and confinement of every path a task names to
// its own directory (task files come from third parties). Task material is opened once, at
// load, through the task's directory and held (Dir, File), so what is later served and graded
// is what was validated. It never talks to containerd or runs anything.
package task
