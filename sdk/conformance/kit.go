package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

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

// verdict is a case's outcome before it is timed.
type verdict struct {
	status Status
	seen   string
}

func pass(format string, args ...any) verdict { return verdict{Pass, fmt.Sprintf(format, args...)} }
func fail(format string, args ...any) verdict { return verdict{Fail, fmt.Sprintf(format, args...)} }
func skip(format string, args ...any) verdict { return verdict{Skip, fmt.Sprintf(format, args...)} }

// kit is the state of one check.
type kit struct {
	bin, sha string
	opts     Options
	typ      plugin.Type
	env      []string
	logger   hclog.Logger
	// desc is the plugin's Describe answer, nil when it could not be had.
	desc *plugin.Description
	// target is the identity Admit and Run ask for.
	target plugin.Identity
	// service is true when the plugin serves the Conformance service;
	// kinds are the scenario kinds it offers.
	service bool
	kinds   map[plugin.ScenarioKind]bool
	seq     atomic.Int64
}

// Check runs the suite against the plugin binary at binaryPath, launched
// as a run would launch it (digest pinned, go-plugin handshake, automatic
// mTLS, the host's environment allow-list plus opts.Env), and returns the
// report. Each case launches its own plugin process. It returns an error
// only when the check cannot start: invalid opts (ErrOptions) or a binary
// that is missing, not a regular file or not executable (ErrBinary). ctx
// bounds the whole check; when it ends, the remaining cases fail.
func Check(ctx context.Context, binaryPath string, opts Options) (*Report, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	bin, err := filepath.Abs(binaryPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %v: %w", binaryPath, err, ErrBinary)
	}
	st, err := os.Stat(bin)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%v: %w", err, ErrBinary)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file: %w", bin, ErrBinary)
	case st.Mode().Perm()&0o111 == 0:
		return nil, fmt.Errorf("%s is not executable: %w", bin, ErrBinary)
	}
	// The binary is read once, into a private copy named by its digest;
	// every case executes that copy, never the path given.
	tmp, err := os.MkdirTemp("", "obversa-conformance-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	copied, err := plugin.CopyBinary("conformance", bin, tmp, plugin.CopyOptions{})
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, ErrBinary)
	}
	sha := copied.SHA256
	k := &kit{bin: copied.Path, sha: sha, opts: opts, typ: opts.pluginType(), env: opts.environment(), logger: opts.Logger}
	if k.logger == nil {
		k.logger = hclog.NewNullLogger()
	}
	rep := &Report{Binary: bin, SHA256: sha, Type: string(k.typ), ScenarioControl: "none"}
	failed := map[string]bool{}
	probed := false
	for _, c := range cases {
		if !c.applies(k.typ) {
			continue
		}
		start := time.Now()
		var v verdict
		switch {
		case len(opts.Only) > 0 && !contains(opts.Only, c.Name):
			v = skip("not selected")
		case c.launches && failed["handshake.line"]:
			v = skip("handshake.line failed: the host cannot launch this plugin")
		case c.configured && failed["configure.valid"]:
			v = skip("configure.valid failed: the plugin refuses the configuration under test")
		default:
			if c.launches && !probed {
				probed = true
				k.probe(ctx)
				rep.Plugin, rep.ScenarioControl = k.pluginName(), k.controlName()
			}
			v = k.runCase(ctx, c)
		}
		if v.status == Fail {
			failed[c.Name] = true
		}
		rep.Results = append(rep.Results, Result{Case: c.Name, Status: v.status, Expected: c.Expected, Seen: v.seen, Duration: time.Since(start)})
	}
	return rep, nil
}

// runCase runs c under the case timeout and turns a panic of the kit
// itself into a failed case rather than a crash.
func (k *kit) runCase(ctx context.Context, c kcase) (v verdict) {
	timeout := k.opts.CaseTimeout
	if timeout <= 0 {
		timeout = DefaultCaseTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			v = fail("the kit itself panicked: %v", r)
		}
	}()
	v = c.run(cctx, k)
	if v.status != Pass && cctx.Err() != nil {
		v = fail("%s (the case ran out of time: %v)", v.seen, cctx.Err())
	}
	return v
}

// probeTimeout bounds the probe's launch, Describe and Scenarios calls.
const probeTimeout = 20 * time.Second

// probe launches the plugin once to learn its description and how it can
// be asked for scenarios.
func (k *kit) probe(ctx context.Context) {
	k.target = k.opts.target("")
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	s, err := k.launch(pctx)
	if err != nil {
		return
	}
	defer s.close()
	if d, err := s.describe(pctx); err == nil {
		k.desc = d
		k.target = k.opts.target(d.Name)
	}
	if k.typ != plugin.TypeEngine {
		return
	}
	kinds, err := s.c.Conformance().Scenarios(pctx)
	if err != nil {
		return
	}
	k.service = true
	k.kinds = map[plugin.ScenarioKind]bool{}
	for _, kind := range kinds {
		k.kinds[kind] = true
	}
}

func (k *kit) pluginName() string {
	if k.desc == nil {
		return ""
	}
	return strings.TrimSpace(k.desc.Name + " " + k.desc.Version)
}

func (k *kit) controlName() string {
	switch {
	case k.service:
		return "service"
	case len(k.opts.Scenarios) > 0:
		return "requests"
	default:
		return "none"
	}
}

// canAsk reports whether the plugin can be asked for s, or why not.
func (k *kit) canAsk(s plugin.Scenario) (bool, string) {
	if k.service {
		if k.kinds[s.Kind] {
			return true, ""
		}
		return false, fmt.Sprintf("the plugin's Conformance service does not offer the %s scenario", s.Kind)
	}
	if _, ok := k.opts.Scenarios[s.String()]; ok {
		return true, ""
	}
	if len(k.opts.Scenarios) > 0 {
		return false, fmt.Sprintf("no request for scenario %q in the conformance options", s)
	}
	return false, "the plugin serves no Conformance service and the options give no scenario requests"
}

// ask prepares req, on session s, to produce sc: it arms the scenario
// through the Conformance service, or rewrites req with the scenario's
// request.
func (k *kit) ask(ctx context.Context, s *session, req *plugin.RunRequest, sc plugin.Scenario) error {
	if k.service {
		if err := s.c.Conformance().Arm(ctx, req.AttemptID, sc); err != nil {
			return fmt.Errorf("arming scenario %s: %w", sc, err)
		}
		return nil
	}
	sr, ok := k.opts.Scenarios[sc.String()]
	if !ok {
		return fmt.Errorf("no request for scenario %q", sc)
	}
	req.Prompt = sr.Prompt
	return nil
}

// defaultPrompt is the prompt of the kit's ordinary Runs.
const defaultPrompt = "Say hello to the Obversa conformance kit."

// runDeadline is the attempt deadline sent with the kit's Runs.
const runDeadline = 30 * time.Second

// request returns an ordinary Run request with a fresh attempt id.
func (k *kit) request(caseName string) plugin.RunRequest {
	n := k.seq.Add(1)
	node := strings.ReplaceAll(caseName, ".", "-")
	return plugin.RunRequest{
		Purpose:   plugin.PurposeOrdinary,
		RunID:     "conformance",
		NodeID:    node,
		Position:  fmt.Sprintf("dag/%s/%d", node, n),
		AttemptID: fmt.Sprintf("conformance-%s-%d", node, n),
		Target:    k.target,
		Prompt:    defaultPrompt,
		Timeout:   runDeadline,
	}
}

// session is one plugin process launched as the host launches it.
type session struct {
	c      *plugin.Client
	engine plugin.Engine
	node   plugin.NodeBinding
	policy plugin.Policy
}

// launch starts the plugin through plugin.Launch, as a run would.
func (k *kit) launch(ctx context.Context) (*session, error) {
	return k.launchLogged(ctx, k.logger)
}

// launchLogged is launch with the plugin's log lines sent to logger.
func (k *kit) launchLogged(ctx context.Context, logger hclog.Logger) (*session, error) {
	c, err := plugin.Launch(ctx, plugin.LaunchConfig{
		Name: "conformance", Type: k.typ, Path: k.bin, SHA256: k.sha, Verified: true,
		Args: k.opts.Args, Env: k.env, Logger: logger, StartTimeout: k.opts.handshakeTimeout(),
	})
	if err != nil {
		return nil, err
	}
	s := &session{c: c}
	switch k.typ {
	case plugin.TypeEngine:
		s.engine, err = c.Engine()
	case plugin.TypePolicy:
		s.policy, err = c.Policy()
	default:
		s.node, err = c.Node()
	}
	if err != nil {
		c.Kill()
		return nil, err
	}
	return s, nil
}

// launchConfigured launches the plugin and configures it with the options'
// configuration; error diagnostics are an error.
func (k *kit) launchConfigured(ctx context.Context) (*session, error) {
	s, err := k.launch(ctx)
	if err != nil {
		return nil, err
	}
	diags, err := s.configure(ctx, k.opts.Config)
	if err == nil {
		if msg := errorDiagnostics(diags); msg != "" {
			err = errors.New("Configure refused the configuration: " + msg)
		}
	}
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// closeGrace bounds the graceful stop of a session before it is killed.
const closeGrace = 250 * time.Millisecond

// close stops the process as the host does, through the controller (so
// that the plugin removes its socket), but waits at most closeGrace before
// killing it: robust.shutdown tests the graceful stop, and a plugin that
// ignores it must not slow every other case down.
func (s *session) close() {
	ctx, cancel := context.WithTimeout(context.Background(), closeGrace)
	defer cancel()
	_ = s.c.Shutdown(ctx)
	s.c.Kill()
}

func (s *session) describe(ctx context.Context) (*plugin.Description, error) {
	return s.c.Describer().Describe(ctx)
}

func (s *session) configure(ctx context.Context, raw []byte) ([]plugin.Diagnostic, error) {
	return s.c.Describer().Configure(ctx, raw)
}

// serving checks that the plugin still answers Describe and has not exited.
func (s *session) serving(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := s.describe(dctx); err != nil {
		return fmt.Errorf("Describe afterwards: %w", err)
	}
	if s.c.Exited() {
		return errors.New("the process exited")
	}
	return nil
}

// errorDiagnostics joins the error-severity diagnostics, "" when none.
func errorDiagnostics(ds []plugin.Diagnostic) string {
	var msgs []string
	for _, d := range ds {
		if d.Severity == plugin.SeverityError {
			m := d.Summary
			if d.Attribute != "" {
				m = d.Attribute + ": " + m
			}
			msgs = append(msgs, m)
		}
	}
	return strings.Join(msgs, "; ")
}
