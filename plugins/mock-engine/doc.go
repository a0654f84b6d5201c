// Command mock-engine is the "mock" engine plugin: scripted answers for
// tests and offline demos, configured by the run file's `config` block
// (see sdk/enginetest and docs/engines.md). With no configuration it
// answers every prompt with a quote of it.
//
// The host starts it; run by hand it explains that and exits.
package main
