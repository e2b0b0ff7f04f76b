// Package bundle projects an agent's plugins and skills out of a repository that may also
// hold grading material: it copies only allowlisted trees, refuses denied paths, escaping
// or absolute symlinks, hard links and special files, and records a sha256 manifest that
// Verify checks in both directions. It never follows a symlink: links are copied and
// hashed as links.
package bundle
