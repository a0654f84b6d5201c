// Package shellquote quotes a word for a POSIX shell, so that a command
// obversa prints for a person to copy (a `next:` line, a UI command) is
// one word per argument whatever the argument holds: a run directory with
// spaces, quotes or `$`, a for_each position with brackets
// (docs/cli.md, "Copy-paste commands"). It is a leaf (standard library
// only) shared by the command line and the host.
package shellquote
