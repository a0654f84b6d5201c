// Package enginetest provides the mock engine: a plugin.Engine whose
// answers are scripted by its run-file configuration. It is a product
// feature, served by plugins/mock-engine for offline demos, and used in
// process by tests of the host.
//
// With no configuration the engine answers every prompt with
// `mock answer to: "<prompt>"` and reports usage derived from the text
// lengths. A configuration (the run file's `config` block, as JSON) can
// script answers per node or prompt, structured output, typed failures,
// delays, usage, a different effective identity, behaviour that changes
// after some calls, a readiness switch for live preflight probes, and logs
// of every call for crash tests. docs/engines.md is the reference; the
// Config type documents each field.
//
// # Rules and counting
//
// Responses are rules tried in order; the first that applies answers. A
// rule's selectors (node, prompt_contains, position_contains, purpose) decide whether a Run
// reaches it; each Run that reaches a rule and matches its selectors
// increments that rule's count (1 for the first such Run). The rule then
// applies when its count is listed in `calls` (if set) and is greater than
// `after_calls`; otherwise the next rule is tried. Counts live in memory:
// they restart at zero when the plugin process restarts or Configure is
// called again. Tests that must survive a crash use effects_file, which is
// appended before any answer is given.
package enginetest
