// Package conformance is the plugin conformance kit: it checks that a
// plugin binary, written in any language that speaks gRPC, behaves as the
// Obversa host needs (docs/writing-plugins.md is the protocol).
//
// Check launches the binary exactly as a run would — the pinned SHA-256,
// go-plugin's handshake with automatic mTLS, the host's environment
// allow-list plus Options.Env — and runs the named cases of Cases against
// it, one plugin process per case. The Report says for every case whether
// it passed, failed or was skipped, what was expected and what was seen.
// `obversa plugin conformance BIN [--config FILE] [--json]` prints it;
// plugin authors call Run from their own tests:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, "bin/my-engine", conformance.Options{Config: json.RawMessage(`{"model": "m"}`)})
//	}
//
// # Scenario control
//
// Some cases need the plugin to produce a particular behaviour: each
// failure kind it declares, a delay to cancel, unknown usage, tool events,
// a late final answer, a handler panic. A plugin asks for them through the
// optional Conformance service (plugin.Conformance; the mock engine serves
// it, sdk.WithConformance adds it to any Go plugin). A pass-through
// plugin — cmd-engine with a fake CLI — is asked through requests instead:
// Options.Scenarios maps a scenario name to the prompt that makes the fake
// produce it. A plugin with neither is checked on the scenario-free cases;
// the report names each case it skipped and why.
//
// # What "settles as aborted" means
//
// When the host cancels a Run, gRPC ends the host's side of the stream at
// once: the host sees its own cancellation, never a message the plugin sends
// afterwards. run.cancel therefore checks two things: the host's stream
// ends within 3 s of the cancellation, and — through the Conformance
// service's Settled call, which reports what the plugin's Run handler
// returned — the plugin's handler itself returned an aborted failure within
// 3 s. Without the service only the first is observable, and the report
// says so.
//
// # The stand-in host
//
// robust.host_death needs a host that dies. The kit re-executes the program
// it runs in — the obversa CLI, a test binary, anything that links this
// package — with OBVERSA_CONFORMANCE_STAND_IN_HOST set; this package's init
// function then acts as a stand-in host: it starts the plugin as the host
// does (with the parent-death signal), reports the plugin's pid and
// handshake line, and waits to be killed. Programs that link this package
// must not set that variable for any other purpose.
//
// # Policies
//
// With Options.Type "policy" the kit checks an action policy
// (docs/policies.md) on the cases that apply to every plugin and on the
// policy cases: Decide answers an engine and a binding action with a known
// verdict, a reason for wait and deny, the same verdict when asked again
// (the host asks again on resume), copes with odd input, and serves
// concurrent calls. Options.Actions lists attempts with the verdict each
// must get, so a policy's author can pin its behaviour in the conformance
// file.
//
// # Dependencies between cases
//
// When handshake.line fails the host could not launch the plugin at all,
// so every case that launches it is skipped; when configure.valid fails,
// every case that needs the configuration is skipped. A broken plugin
// therefore fails the case it breaks rather than every case after it.
package conformance
