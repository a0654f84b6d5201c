// Package bidi names the bidirectional formatting characters that every
// view of a run's text shows as escapes (docs/decisions.md, "What the run
// produced is escaped"): the command line's escaping writer, the Mermaid
// labels of host/diagram and the web UI's text all take them from here,
// so they agree on one list. It is a leaf (standard library only).
package bidi
