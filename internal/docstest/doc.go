// Package docstest holds the tests that keep README.md and docs/*.md true where no package
// owns the promise: every relative link and anchor resolves, and the README's quick start is
// two commands, the second of which is what .ci/run runs. The promises a package owns (an
// attack count, a quick start that runs, a mapping table) are tested beside that package.
package docstest
