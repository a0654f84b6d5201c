package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/plugin"
)

// ConfigDirPlaceholder is replaced, in every string of a conformance file's
// args, env, config and scenario prompts, by the absolute directory that
// holds the file, so that a file can name fake executables beside it.
const ConfigDirPlaceholder = "{config_dir}"

// Options says how to launch and drive the plugin under test. The JSON
// fields are the conformance file that `obversa plugin conformance --config
// FILE` reads (see LoadOptions); every field is optional.
type Options struct {
	// Type is the plugin type to check: "engine" (the default), "node" or
	// "policy". A node binding is checked on the cases that call no
	// service of another type; a policy on those and the policy cases.
	Type plugin.Type `json:"type,omitempty"`
	// Args are the plugin's arguments after the program name, as the run
	// file's `args`.
	Args []string `json:"args,omitempty"`
	// Env is added to the plugin's environment on top of the variables the
	// host passes every plugin (PATH, HOME, TMPDIR, LANG, LANGUAGE, LC_*,
	// TZ, USER, LOGNAME, TERM), as the run file's `env`.
	Env map[string]string `json:"env,omitempty"`
	// PassEnv names variables of this process's environment passed to the
	// plugin as well, as the run file's `pass_env`.
	PassEnv []string `json:"pass_env,omitempty"`
	// Config is passed to Configure before every case that calls the
	// plugin, as the run file's `config` block; absent = no configuration
	// (an empty config_json, as for a plugin block without `config`).
	Config json.RawMessage `json:"config,omitempty"`
	// InvalidConfig is a configuration Configure must answer with error
	// diagnostics; absent = DefaultInvalidConfig.
	InvalidConfig json.RawMessage `json:"invalid_config,omitempty"`
	// Target is the identity Admit and Run ask for. Empty fields take the
	// defaults of DefaultTarget, with the adapter taken from Describe.
	Target plugin.Identity `json:"target,omitzero"`
	// Scenarios is scenario control through requests, for plugins that do
	// not serve the Conformance service (a pass-through engine such as
	// cmd-engine with a fake CLI): for a scenario name ("delay",
	// "failure:rate_limit", see plugin.ParseScenario) the Run request the
	// kit sends to produce it. The plugin must then behave as the
	// scenario's documentation in plugin.ScenarioKind says. A plugin that
	// serves the Conformance service is asked through it instead.
	Scenarios map[string]ScenarioRequest `json:"scenarios,omitempty"`
	// Actions are attempts a policy is asked about, each with the verdict
	// it must give (case policy.actions); policies only.
	Actions []PolicyAction `json:"actions,omitempty"`

	// Only restricts the check to the named cases; the others are
	// reported as skipped. Empty = every case.
	Only []string `json:"-"`
	// Logger receives the plugin's log lines (its stderr) as the host
	// re-logs them; nil = discarded.
	Logger hclog.Logger `json:"-"`
	// HandshakeTimeout bounds the wait for the plugin's handshake line, in
	// the handshake cases and in every launch; 0 =
	// DefaultHandshakeTimeout, the host's own bound. A shorter one lets a
	// test fail a slow plugin quickly.
	HandshakeTimeout time.Duration `json:"-"`
	// CaseTimeout bounds each case; 0 = DefaultCaseTimeout. No case waits
	// that long unless the plugin hangs.
	CaseTimeout time.Duration `json:"-"`
	// Timeout bounds the whole check; 0 = DefaultTimeout. Once it has
	// passed, the case under way fails and every case after it fails
	// without running, each saying so (`obversa plugin conformance
	// --timeout`).
	Timeout time.Duration `json:"-"`
}

// ScenarioRequest is the Run request that makes a pass-through plugin
// produce a scenario: its fields replace those of the kit's ordinary
// request.
type ScenarioRequest struct {
	// Prompt replaces the prompt; required.
	Prompt string `json:"prompt"`
}

// PolicyAction is one attempt the kit asks a policy about, as the host
// would (docs/policies.md), and the verdict expected. Kind "engine" sends
// Prompt to the options' target; kind "binding" sends Input to the binding
// "shell".
type PolicyAction struct {
	// Name says what the action shows, for the report.
	Name string            `json:"name"`
	Kind plugin.ActionKind `json:"kind"`
	// Prompt is the rendered prompt of an engine action.
	Prompt string `json:"prompt,omitempty"`
	// Input is the rendered input of a binding action.
	Input json.RawMessage `json:"input,omitempty"`
	// Want is allow, wait or deny.
	Want plugin.Verdict `json:"want"`
}

// DefaultInvalidConfig is the configuration the kit expects every plugin to
// refuse when Options.InvalidConfig is absent: a JSON array where the run
// file's `config` block always gives an object.
var DefaultInvalidConfig = json.RawMessage(`["not", "an object"]`)

// DefaultTarget is the identity asked for when Options.Target leaves a
// field empty; the adapter is the name the plugin describes itself with.
var DefaultTarget = plugin.Identity{Provider: "local", ModelFamily: "conformance", Model: "conformance-1"}

// DefaultCaseTimeout bounds each case when Options.CaseTimeout is 0.
const DefaultCaseTimeout = 2 * time.Minute

// DefaultTimeout bounds the whole check when Options.Timeout is 0: a
// plugin that follows the protocol passes every case in seconds (each
// case launches it afresh), while one that hangs would otherwise hold each
// case to its own bound — about ten minutes in all.
const DefaultTimeout = 5 * time.Minute

// LoadOptions reads a conformance file: a JSON object with the fields of
// Options. ConfigDirPlaceholder in its strings becomes the file's absolute
// directory. It returns the error from reading the file, or an error
// wrapping ErrOptions for a file that is not such an object.
func LoadOptions(path string) (Options, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Options{}, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Options{}, err
	}
	o, err := DecodeOptions(data, filepath.Dir(abs))
	if err != nil {
		return Options{}, fmt.Errorf("%s: %w", path, err)
	}
	return o, nil
}

// DecodeOptions decodes a conformance file's content, replacing
// ConfigDirPlaceholder by dir, and validates it: unknown fields, a type
// other than engine or node, scenario names that plugin.ParseScenario
// refuses and scenarios without a prompt are errors wrapping ErrOptions.
func DecodeOptions(data []byte, dir string) (Options, error) {
	quoted, _ := json.Marshal(dir)
	escaped := string(quoted[1 : len(quoted)-1])
	data = bytes.ReplaceAll(data, []byte(ConfigDirPlaceholder), []byte(escaped))
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var o Options
	if err := dec.Decode(&o); err != nil {
		return Options{}, fmt.Errorf("conformance file: %v: %w", err, ErrOptions)
	}
	if dec.More() {
		return Options{}, fmt.Errorf("conformance file: more than one JSON value: %w", ErrOptions)
	}
	if err := o.validate(); err != nil {
		return Options{}, err
	}
	return o, nil
}

// validate checks what DecodeOptions promises; Check calls it too.
func (o *Options) validate() error {
	var problems []string
	switch o.Type {
	case "", plugin.TypeEngine, plugin.TypeNode, plugin.TypePolicy:
	default:
		problems = append(problems, fmt.Sprintf("type %q: want %q, %q or %q", o.Type, plugin.TypeEngine, plugin.TypeNode, plugin.TypePolicy))
	}
	if len(o.Actions) > 0 && o.Type != plugin.TypePolicy {
		problems = append(problems, `actions are for policies: set "type": "policy"`)
	}
	for i, a := range o.Actions {
		switch {
		case a.Kind != plugin.ActionEngine && a.Kind != plugin.ActionBinding:
			problems = append(problems, fmt.Sprintf("actions[%d]: kind %q: want %q or %q", i, a.Kind, plugin.ActionEngine, plugin.ActionBinding))
		case !a.Want.Valid():
			problems = append(problems, fmt.Sprintf("actions[%d]: want %q: want allow, wait or deny", i, a.Want))
		case len(a.Input) > 0 && !json.Valid(a.Input):
			problems = append(problems, fmt.Sprintf("actions[%d]: input is not valid JSON", i))
		}
	}
	for _, raw := range []json.RawMessage{o.Config, o.InvalidConfig} {
		if len(raw) > 0 && !json.Valid(raw) {
			problems = append(problems, "config and invalid_config must be valid JSON")
		}
	}
	names := make([]string, 0, len(o.Scenarios))
	for name := range o.Scenarios {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, err := plugin.ParseScenario(name); err != nil {
			problems = append(problems, fmt.Sprintf("scenarios: %v", err))
		}
		if o.Scenarios[name].Prompt == "" {
			problems = append(problems, fmt.Sprintf("scenarios[%q]: prompt is empty", name))
		}
	}
	for _, name := range o.Only {
		if caseByName(name) == nil {
			problems = append(problems, fmt.Sprintf("unknown case %q (cases: %s)", name, strings.Join(CaseNames(), ", ")))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("conformance options: %s: %w", strings.Join(problems, "; "), ErrOptions)
	}
	return nil
}

// timeout is Timeout or its default.
func (o *Options) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return DefaultTimeout
}

// handshakeTimeout is HandshakeTimeout or its default.
func (o *Options) handshakeTimeout() time.Duration {
	if o.HandshakeTimeout > 0 {
		return o.HandshakeTimeout
	}
	return DefaultHandshakeTimeout
}

// pluginType is the type under test.
func (o *Options) pluginType() plugin.Type {
	if o.Type == "" {
		return plugin.TypeEngine
	}
	return o.Type
}

// target fills the empty fields of Options.Target: the adapter from the
// plugin's Describe, the rest from DefaultTarget, no tools.
func (o *Options) target(adapter string) plugin.Identity {
	d := DefaultTarget
	d.Adapter, d.Tools = adapter, []string{}
	return o.Target.Or(d)
}

// inheritedEnv lists the variables the host passes every plugin from its
// own environment (host/launch.Env; docs/architecture.md#the-watchdog). The kit launches the
// plugin with the same environment a run would give it.
var inheritedEnv = []string{"PATH", "HOME", "TMPDIR", "LANG", "LANGUAGE", "TZ", "USER", "LOGNAME", "TERM"}

// environment returns the plugin's environment: the inherited variables of
// this process and those named in o.PassEnv, then o.Env, sorted.
func (o *Options) environment() []string {
	vars := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "LC_") || contains(inheritedEnv, k) || contains(o.PassEnv, k) {
			vars[k] = v
		}
	}
	for k, v := range o.Env {
		vars[k] = v
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
