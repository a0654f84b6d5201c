// Command cmd-engine is the "cmd" plugin: one binary serving both plugin
// types. As an engine it adapts any model CLI (claude, llm, ...) configured
// by an argv template, output format and failure rules; as a node binding
// it runs the command given in a node's input in the run's workspace. Every
// command runs as an owned command (sdk/command): its own process group,
// capped output, a timeout, and nothing left running afterwards.
//
// The host starts it; run by hand it explains that and exits. See
// docs/engines.md for the configuration reference and presets.
package main
