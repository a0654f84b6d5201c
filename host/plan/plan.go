package plan

import (
	"encoding/json"
	"time"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/plugin"
)

// Plan is the resolved plan of a run. Durations are milliseconds.
type Plan struct {
	RunID     string    `json:"run_id"`
	Namespace string    `json:"namespace"`
	Workspace Workspace `json:"workspace"`
	Storage   Storage   `json:"storage"`
	Limits    Limits    `json:"limits"`
	Restart   Restart   `json:"restart"`
	// TeardownGraceMS is the grace between SIGTERM and SIGKILL.
	TeardownGraceMS int64        `json:"teardown_grace_ms"`
	Preflight       *Preflight   `json:"preflight,omitempty"`
	Plugins         []PluginPlan `json:"plugins"`
	Lanes           []LanePlan   `json:"lanes"`
	// Policies names the policy plugins asked, in this order, before
	// every attempt's effects (docs/policies.md); PolicyTimeoutMS bounds
	// each answer.
	Policies        []string `json:"policies,omitempty"`
	PolicyTimeoutMS int64    `json:"policy_timeout_ms,omitempty"`
}

// Workspace is the run's workspace.
type Workspace struct {
	Root     string `json:"root"`
	Provider string `json:"provider"`
}

// Storage is the record policy of the run (bytes).
type Storage struct {
	Directory                   string   `json:"directory"`
	MaxEventPayloadBytes        int64    `json:"max_event_payload_bytes"`
	MaxBatchBytes               int64    `json:"max_batch_bytes"`
	MaxArtifactBytes            int64    `json:"max_artifact_bytes"`
	MaxTotalArtifactBytesPerRun int64    `json:"max_total_artifact_bytes_per_run"`
	KnownSecretsFromEnv         []string `json:"known_secrets_from_env,omitempty"`
	// MaxLogBytes caps each log beside the record; 0 = the default, 8 MiB.
	MaxLogBytes int64 `json:"max_log_bytes,omitempty"`
	// MaxStreamBytes caps stream.jsonl, the live engine output beside the
	// record; 0 = the default, 64 MiB.
	MaxStreamBytes int64 `json:"max_stream_bytes,omitempty"`
}

// Limits bound the run as a whole. Token budgets count the known usage of
// the nodes' engine calls; 0 means none (docs/decisions.md, "Usage and
// budgets").
type Limits struct {
	TimeoutMS        int64 `json:"timeout_ms"`
	MaxDispatches    int   `json:"max_dispatches"`
	MaxInputTokens   int64 `json:"max_input_tokens,omitempty"`
	MaxOutputTokens  int64 `json:"max_output_tokens,omitempty"`
	StopOnUnmeasured bool  `json:"stop_on_unmeasured,omitempty"`
}

// Restart bounds worker restarts.
type Restart struct {
	MaxRestarts      int   `json:"max_restarts"`
	InitialBackoffMS int64 `json:"initial_backoff_ms"`
	MaxBackoffMS     int64 `json:"max_backoff_ms"`
}

// Preflight is the stored preflight policy: one entry per lane.
type Preflight struct {
	TimeoutMS int64           `json:"timeout_ms"`
	Lanes     []LanePreflight `json:"lanes"`
}

// LanePreflight is one lane's preflight policy.
type LanePreflight struct {
	Lane              string `json:"lane"`
	Live              string `json:"live"`
	UnsupportedStatic string `json:"unsupported_static"`
}

// PluginPlan pins one plugin of the run.
type PluginPlan struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	SHA256 string `json:"sha256"`
	// Source is the path the binary was pinned from; workers execute the
	// content-addressed copy in the storage directory's plugin cache.
	Source string            `json:"source"`
	Args   []string          `json:"args,omitempty"`
	Env    map[string]string `json:"env,omitempty"`
	// PassEnv names host variables the plugin receives at launch; only the
	// names are stored.
	PassEnv []string        `json:"pass_env,omitempty"`
	Config  json.RawMessage `json:"config,omitempty"`
	// ConfigDigest is "sha256:<hex>" of the canonical config JSON.
	ConfigDigest string `json:"config_digest"`
	// KeyID is the minisign key id (16 upper-case hex digits) of the
	// trusted key whose signature was verified when the run was created;
	// empty when the run file required no signature (docs/plugins.md).
	KeyID string `json:"key_id,omitempty"`
	// Signature is "sha256:<hex>" of the verified .minisig file; set with
	// KeyID.
	Signature string `json:"signature,omitempty"`
	// Confine is the plugin's confinement as the run file declared it,
	// defaults applied (docs/confinement.md); nil in runs recorded before
	// confinement existed, whose plugins stay unconfined.
	Confine *Confine `json:"confine,omitempty"`
	// StartTimeoutMS bounds the wait for the plugin's handshake at each
	// launch, in milliseconds; 0 = the host's default
	// (plugin.DefaultStartTimeout).
	StartTimeoutMS int64 `json:"start_timeout_ms,omitempty"`
}

// StartTimeout returns the bound on the plugin's handshake; 0 = the
// host's default.
func (p *PluginPlan) StartTimeout() time.Duration { return ms(p.StartTimeoutMS) }

// Confine is a plugin's recorded confinement: every later process of the
// run confines the plugin the same way (docs/confinement.md).
type Confine struct {
	// Write lists absolute paths the plugin may write besides the
	// workspace root, the run's scratch directory and its state
	// directory.
	Write []string `json:"write,omitempty"`
	// DenyRead lists absolute paths the plugin may not read.
	DenyRead []string `json:"deny_read,omitempty"`
	// Network allows TCP connect and bind.
	Network bool `json:"network"`
	// MemoryBytes limits the memory of the plugin and its descendants
	// (bytes); 0 = no limit.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// Required refuses to launch the plugin where the kernel cannot
	// enforce all of it.
	Required bool `json:"required,omitempty"`
}

// LanePlan is one lane: what was requested, what may stand in, what will
// be used first and what follows it.
type LanePlan struct {
	Name               string            `json:"name"`
	Requested          plugin.Identity   `json:"requested"`
	KnownSubstitutions []plugin.Identity `json:"known_substitutions"`
	Effective          plugin.Identity   `json:"effective"`
	Fallbacks          []plugin.Identity `json:"fallbacks"`
}

// Targets returns the lane's targets in the order they are tried: the
// effective target, then the fallbacks.
func (l *LanePlan) Targets() []plugin.Identity {
	return append([]plugin.Identity{l.Effective}, l.Fallbacks...)
}

// Lane returns the lane plan with the given name.
func (p *Plan) Lane(name string) (*LanePlan, bool) {
	for i := range p.Lanes {
		if p.Lanes[i].Name == name {
			return &p.Lanes[i], true
		}
	}
	return nil, false
}

// Plugin returns the plugin plan with the given name.
func (p *Plan) Plugin(name string) (*PluginPlan, bool) {
	for i := range p.Plugins {
		if p.Plugins[i].Name == name {
			return &p.Plugins[i], true
		}
	}
	return nil, false
}

// ms converts a stored millisecond count: every duration of the plan and
// definition is kept in milliseconds and read through the methods below.
func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// Timeout returns limits.timeout; 0 means none.
func (p *Plan) Timeout() time.Duration { return ms(p.Limits.TimeoutMS) }

// TeardownGrace returns the grace between SIGTERM and SIGKILL.
func (p *Plan) TeardownGrace() time.Duration { return ms(p.TeardownGraceMS) }

// PolicyTimeout returns the bound of each policy's answer:
// policy_timeout, or hcl.DefaultPolicyTimeout when the plan has none.
func (p *Plan) PolicyTimeout() time.Duration {
	if p.PolicyTimeoutMS <= 0 {
		return hcl.DefaultPolicyTimeout
	}
	return ms(p.PolicyTimeoutMS)
}

// PreflightTimeout returns the bound of each preflight probe:
// preflight.timeout, or hcl.DefaultPreflightTimeout when the plan has no
// preflight policy or no timeout (the run file's default is the same).
func (p *Plan) PreflightTimeout() time.Duration {
	if p.Preflight == nil || p.Preflight.TimeoutMS <= 0 {
		return hcl.DefaultPreflightTimeout
	}
	return ms(p.Preflight.TimeoutMS)
}

// Backoff returns the wait before restart n+1 after n restarts (0-based):
// min(max_backoff, initial_backoff·2^n) (docs/run-file.md, restart).
func (r Restart) Backoff(n int) time.Duration {
	d, limit := ms(r.InitialBackoffMS), ms(r.MaxBackoffMS)
	for i := 0; i < n && d < limit; i++ {
		d *= 2
	}
	if limit > 0 && d > limit {
		d = limit
	}
	return d
}

// RunStarted is the data of the run's first event, graph:run-started.
type RunStarted struct {
	RunID            string            `json:"run_id"`
	Namespace        string            `json:"namespace"`
	RunFile          string            `json:"run_file"`
	Definition       *graph.Definition `json:"definition"`
	DefinitionDigest string            `json:"definition_digest"`
	Plan             *Plan             `json:"plan"`
	PlanDigest       string            `json:"plan_digest"`
	StartedAt        time.Time         `json:"started_at"`
}
