// Package cmdengine implements the cmd plugin: one binary that serves both
// plugin types.
//
// As an engine (Engine) it adapts any model CLI: it runs a configured argv
// template through the owned-command runner (sdk/command), passes the
// prompt on stdin, in a file or as an argument, reads the answer from
// stdout as plain text, one JSON object, or JSON lines (streamed as events
// while the CLI runs), and maps exit codes and output patterns to typed
// failures. As a node binding (Node) it runs the argv given in a node's
// input in the run's workspace and returns its exit code and output.
//
// Values of the environment variables named in secrets_from_env are
// replaced by "[REDACTED]" in everything either returns: answer parts,
// streamed events, node output and failure messages.
//
// docs/engines.md is the configuration reference.
package cmdengine
