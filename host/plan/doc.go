// Package plan compiles a decoded run file into the two documents a run
// keeps for its whole life (docs/run-file.md): the graph Definition and the
// resolved Plan (lanes with requested, known substitutions, effective
// target and fallbacks; preflight policy; each plugin's name, type, SHA-256,
// args and config digest; limits). Both are stored as canonical JSON
// (RFC 8785) with their digests in the run's first event,
// graph:run-started, and every later process works from that copy.
package plan
