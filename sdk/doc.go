// Package sdk is what Obversa plugin authors import to write an engine (an
// adapter to a model CLI or API), a node binding (a data step) or an action
// policy (asked before every attempt's effects, docs/policies.md) as a
// plugin binary (docs/writing-plugins.md).
//
// A plugin's main function calls ServeEngine, ServeNode or ServePolicy, or
// Serve with WithEngine, WithNode and WithPolicy to serve several from one
// binary. Serve performs the
// handshake with the host and serves until the host closes the plugin.
//
// Output rules: standard output carries only the handshake line, which
// Serve writes; printing anything there first makes the host refuse the
// plugin. Logs go to standard error as hclog JSON (use Logger), which the
// host parses and re-logs under the plugin's name. Stray writes to
// os.Stdout or os.Stderr after the handshake reach the host's log as plain
// lines.
//
// Errors: return a typed *Failure (see Fail) so that the host can route the
// failure by kind — retire a dead target, fall back, or retry. Any other
// error reaches the host as FailureUnknown; a handler panic does too, and
// the plugin keeps serving. Honour the context of every call: a cancelled
// Run must stop within 3 s.
//
// The types an Engine or NodeBinding needs are re-exported here as aliases
// of package plugin, so that most plugins import only sdk.
package sdk
