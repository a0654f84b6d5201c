package conformance

import (
	"context"

	"github.com/obversa/obversa/plugin"
)

// Case describes one conformance case.
type Case struct {
	// Name identifies the case ("run.cancel").
	Name string
	// Expected says what the case checks, as the report's EXPECTED column.
	Expected string
}

// kcase is a case with what it needs and how it runs.
type kcase struct {
	Case
	// launches: the case launches the plugin as the host does, so it is
	// skipped when handshake.line failed.
	launches bool
	// engine: the case calls the Engine service (skipped for node
	// bindings and policies).
	engine bool
	// policy: the case calls the Policy service (skipped for the other
	// types).
	policy bool
	// configured: the case configures the plugin first, so it is skipped
	// when configure.valid failed.
	configured bool
	run        func(ctx context.Context, k *kit) verdict
}

// cases is the suite, in the order it runs and is reported.
var cases []kcase

func init() {
	cases = []kcase{
		{Case: Case{"handshake.line", "the first stdout line is the handshake (core 1, protocol 1, unix or tcp, grpc, a TLS certificate for localhost when the host offers mTLS), nothing before it; the host's own launch then succeeds"},
			run: caseHandshakeLine},
		{Case: Case{"handshake.cookie", "with a wrong magic cookie the plugin refuses to start: no handshake line, a non-zero exit within 5 s, a message on stderr"},
			run: caseHandshakeCookie},
		{Case: Case{"handshake.version", "offered protocol versions 1; 1,1000; 1000,1 the plugin answers 1, the highest version both speak"},
			run: caseHandshakeVersion, launches: true},
		{Case: Case{"handshake.stdout", "after the handshake line the plugin writes nothing more to its stdout during a launch, Describe, Configure and (engines) a Run: that stream carries the handshake line alone (output through go-plugin's stdio service is fine)"},
			run: caseHandshakeStdout, launches: true},
		{Case: Case{"health", `grpc.health.v1 Check("plugin") answers SERVING within 1 s`},
			run: caseHealth, launches: true},
		{Case: Case{"describe", "Describe names the plugin (id grammar), a version, the type under test and known failure kinds, and answers the same three times"},
			run: caseDescribe, launches: true},
		{Case: Case{"configure.valid", "Configure accepts the configuration under test: no error diagnostics"},
			run: caseConfigureValid, launches: true},
		{Case: Case{"configure.invalid", "Configure answers an invalid configuration with error diagnostics, not an RPC error, and the plugin keeps serving"},
			run: caseConfigureInvalid, launches: true},
		{Case: Case{"admit", "Admit answers a selection or unsupported, within 5 s and without a model call"},
			run: caseAdmit, launches: true, engine: true, configured: true},
		{Case: Case{"run.parts", "a Run streams valid events, then exactly one terminal message and nothing after it; the result's parts have known kinds and valid JSON, and exactly one is final (text or structured)"},
			run: caseRunParts, launches: true, engine: true, configured: true},
		{Case: Case{"run.structured", "a Run with an output schema ends with a final structured part holding valid JSON (engines declaring structured output)"},
			run: caseRunStructured, launches: true, engine: true, configured: true},
		{Case: Case{"run.usage", "usage is reported exactly or unknown, never an invented zero; usage events agree with the result; with unknown usage (scenario) the result says unknown"},
			run: caseRunUsage, launches: true, engine: true, configured: true},
		{Case: Case{"run.tools", "tool events (scenario) come as use then result, and the result keeps them as parts in stream order before the final part"},
			run: caseRunTools, launches: true, engine: true, configured: true},
		{Case: Case{"run.cancel", "a cancelled Run (delay scenario) ends at once on the host's side and settles on the plugin's side as an aborted failure within 3 s; the plugin keeps serving"},
			run: caseRunCancel, launches: true, engine: true, configured: true},
		{Case: Case{"run.attempts", "the Attempts stream, when served (UNIMPLEMENTED otherwise): two calls on it end with valid results while a delayed call (scenario) waits, a cancel ends that call alone with an aborted failure within 3 s, no call gets messages after its terminal one, and the stream ends OK once the host closes its side"},
			run: caseRunAttempts, launches: true, engine: true, configured: true},
		{Case: Case{"run.late_final", "a final answer that arrives after an upstream transport failure (scenario) is kept: the Run returns a result with it"},
			run: caseRunLateFinal, launches: true, engine: true, configured: true},
		{Case: Case{"run.workspace_read", `a Run with workspace_mode "read" and no tools fails invalid_config`},
			run: caseRunWorkspaceRead, launches: true, engine: true, configured: true},
		{Case: Case{"failures", "each failure kind the plugin declares comes back typed as itself (failure scenarios)"},
			run: caseFailures, launches: true, engine: true, configured: true},
		{Case: Case{"robust.large_request", "a 5 MiB request is answered, or refused with a clear error, within 30 s, and the plugin keeps serving"},
			run: caseLargeRequest, launches: true, engine: true, configured: true},
		{Case: Case{"robust.panic", "a handler panic (scenario) reaches the host as an unknown failure and the plugin keeps serving"},
			run: casePanic, launches: true, engine: true, configured: true},
		{Case: Case{"robust.concurrency", "8 concurrent Runs (or the declared maximum) all end with a result within 30 s"},
			run: caseConcurrency, launches: true, engine: true, configured: true},
		{Case: Case{"policy.decide", "Decide answers an engine action and a binding action with allow, wait or deny within 5 s, a wait or deny with a reason, and the same verdict when asked again"},
			run: casePolicyDecide, launches: true, policy: true, configured: true},
		{Case: Case{"policy.actions", "each action of the conformance file gets the verdict it names"},
			run: casePolicyActions, launches: true, policy: true, configured: true},
		{Case: Case{"policy.robust", "a binding input that is not an object and an empty prompt are answered or refused with a typed failure within 5 s, never allowed by a made-up verdict, and the plugin keeps serving"},
			run: casePolicyRobust, launches: true, policy: true, configured: true},
		{Case: Case{"policy.concurrency", "8 concurrent Decide calls all answer within 30 s"},
			run: casePolicyConcurrency, launches: true, policy: true, configured: true},
		{Case: Case{"robust.shutdown", "after go-plugin's controller Shutdown the process exits within 2 s"},
			run: caseShutdown, launches: true},
		{Case: Case{"robust.host_death", "when the process that launched it is killed, the plugin process is gone and nothing serves at its address within 2 s (Linux)"},
			run: caseHostDeath, launches: true},
	}
}

// applies reports whether the case checks plugins of type typ: engine
// cases only engines, policy cases only policies, the others every type.
// A report leaves out the cases that do not apply.
func (c *kcase) applies(typ plugin.Type) bool {
	switch {
	case c.engine:
		return typ == plugin.TypeEngine
	case c.policy:
		return typ == plugin.TypePolicy
	}
	return true
}

// CasesFor returns the cases that check plugins of type typ, in the order
// they run: what a report of such a plugin lists.
func CasesFor(typ plugin.Type) []Case {
	var out []Case
	for _, c := range cases {
		if c.applies(typ) {
			out = append(out, c.Case)
		}
	}
	return out
}

// Cases returns the suite's cases in the order they run.
func Cases() []Case {
	out := make([]Case, len(cases))
	for i, c := range cases {
		out[i] = c.Case
	}
	return out
}

// CaseNames returns the names of Cases.
func CaseNames() []string {
	out := make([]string, len(cases))
	for i, c := range cases {
		out[i] = c.Name
	}
	return out
}

func caseByName(name string) *kcase {
	for i := range cases {
		if cases[i].Name == name {
			return &cases[i]
		}
	}
	return nil
}
