package hcl

import (
	"encoding/json"
	"time"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// RunFile is a decoded, validated run file (docs/run-file.md). Relative paths are
// already resolved against the directory of the run file. Durations are
// time.Duration; sizes are bytes.
type RunFile struct {
	// Filename is the path the file was read from, as given.
	Filename string `json:"filename"`
	// Dir is the absolute directory of the run file.
	Dir string `json:"dir"`

	Workspace     Workspace     `json:"workspace"`
	Storage       Storage       `json:"storage"`
	Limits        Limits        `json:"limits"`
	Restart       Restart       `json:"restart"`
	TeardownGrace time.Duration `json:"teardown_grace"`
	// Preflight is nil when the run file has no top-level preflight block and
	// no lane has one.
	Preflight *Preflight `json:"preflight,omitempty"`
	// TrustedKeys are minisign public keys (base64 lines or file paths, as
	// written); a non-empty list makes a valid signature mandatory.
	TrustedKeys []string `json:"trusted_keys,omitempty"`
	// TrustedKeyRanges locate each entry of TrustedKeys, for diagnostics.
	TrustedKeyRanges []hclv2.Range `json:"-"`

	Plugins []Plugin `json:"plugins"`
	Lanes   []Lane   `json:"lanes"`
	Graph   Graph    `json:"graph"`
}

// Plugin returns the plugin block named name, nil when there is none.
func (rf *RunFile) Plugin(name string) *Plugin {
	for i := range rf.Plugins {
		if rf.Plugins[i].Name == name {
			return &rf.Plugins[i]
		}
	}
	return nil
}

// Workspace is the `workspace` block.
type Workspace struct {
	// Root is absolute and, when the run file sets it, an existing
	// directory. Default: the run file's directory.
	Root string `json:"root"`
	// Provider is "git", "files" or "none". Default "none".
	Provider string `json:"provider"`
	// AllowOutside is true when the run file accepts a Root outside its
	// own directory (allow_outside = true); decoding warns otherwise.
	AllowOutside bool `json:"allow_outside,omitempty"`
}

// Storage is the `storage` block.
type Storage struct {
	// Directory is absolute. Default: ".obversa" beside the run file. With
	// URL set it holds what is kept beside the record on this host: logs,
	// the live output stream and the plugin cache.
	Directory string `json:"directory"`
	// URL, when set, names a PostgreSQL database that keeps the record
	// (postgres:// or postgresql://, without a password); empty keeps it
	// in Directory.
	URL string `json:"url,omitempty"`
	// Namespace defaults to "default"; it matches the id grammar.
	Namespace                   string   `json:"namespace"`
	MaxEventPayloadBytes        int64    `json:"max_event_payload_bytes"`          // default 65536
	MaxBatchBytes               int64    `json:"max_batch_bytes"`                  // default 4194304
	MaxArtifactBytes            int64    `json:"max_artifact_bytes"`               // default 1048576
	MaxTotalArtifactBytesPerRun int64    `json:"max_total_artifact_bytes_per_run"` // default 16777216
	KnownSecretsFromEnv         []string `json:"known_secrets_from_env,omitempty"`
	// MaxLogBytes caps each log file beside the record (plugins.log,
	// worker.log), rotated once; 0 = 8 MiB (internal/logfile).
	MaxLogBytes int64 `json:"max_log_bytes,omitempty"`
	// MaxStreamBytes caps stream.jsonl, the run's live engine output
	// beside the record (its current and previous segment together); 0 =
	// 64 MiB (host/stream).
	MaxStreamBytes int64 `json:"max_stream_bytes,omitempty"`
}

// Limits is the `limits` block. The token budgets count the known usage
// of every engine call of the run's nodes (docs/decisions.md, "Usage and
// budgets"); 0 means no budget.
type Limits struct {
	Timeout       time.Duration `json:"timeout"`        // default 30m
	MaxDispatches int           `json:"max_dispatches"` // default 200
	// MaxInputTokens and MaxOutputTokens: once the known total passes
	// one, nothing new is dispatched and the run ends BUDGET_STOP.
	MaxInputTokens  int64 `json:"max_input_tokens,omitempty"`
	MaxOutputTokens int64 `json:"max_output_tokens,omitempty"`
	// StopOnUnmeasured makes one engine call without measured usage stop
	// the run the same way.
	StopOnUnmeasured bool `json:"stop_on_unmeasured,omitempty"`
	// PluginMemory is the memory limit (bytes) of every plugin whose
	// confine block sets none; 0 = none (the default).
	PluginMemory int64 `json:"plugin_memory,omitempty"`
}

// Restart is the `restart` block.
type Restart struct {
	MaxRestarts    int           `json:"max_restarts"`    // default 3
	InitialBackoff time.Duration `json:"initial_backoff"` // default 1s
	MaxBackoff     time.Duration `json:"max_backoff"`     // default 30s
}

// Preflight is the top-level `preflight` block.
type Preflight struct {
	Timeout time.Duration `json:"timeout"` // default 20s
}

// Plugin is a `plugin "<name>"` block.
type Plugin struct {
	Name string `json:"name"`
	// Type is "engine", "node" or "policy".
	Type string `json:"type"`
	// Path is absolute.
	Path string `json:"path"`
	// WrittenPath is path as the run file writes it, cleaned: relative to
	// the run file's directory unless written absolute. The lock file
	// records it (LockPath).
	WrittenPath string `json:"-"`
	// SHA256 is lower-case hex, empty when the run file does not pin it.
	SHA256 string   `json:"sha256,omitempty"`
	Args   []string `json:"args,omitempty"`
	// Env is passed to the plugin process on top of the allow-listed
	// environment.
	Env map[string]string `json:"env,omitempty"`
	// PassEnv names host environment variables passed to the plugin
	// process by value at launch (API keys); their values are never
	// stored in the plan or the record.
	PassEnv []string `json:"pass_env,omitempty"`
	// Config is the `config` attribute as JSON; nil when absent.
	Config      json.RawMessage `json:"config,omitempty"`
	TrustedKeys []string        `json:"trusted_keys,omitempty"`
	// Confine is the plugin's confinement: its confine block on the
	// defaults of its type and limits.plugin_memory.
	Confine Confine `json:"confine"`
	// StartTimeout bounds the wait for the plugin's handshake at each
	// launch; 0 = the host's default (plugin.DefaultStartTimeout).
	StartTimeout time.Duration `json:"start_timeout,omitempty"`
	Range        Range         `json:"-"`
	// Ranges locate the block's parts for diagnostics about the plugin
	// after decoding (CheckPluginFiles, CheckPins, ConfigRange).
	Ranges PluginRanges `json:"-"`
}

// PluginRanges are where a plugin block's parts are in the run file. A
// part the block does not set has the block header's range.
type PluginRanges struct {
	Block  hclv2.Range // the header, plugin "<name>"
	Path   hclv2.Range // the path value
	SHA256 hclv2.Range // the sha256 value
	Config hclv2.Range // the config value
	// TrustedKeys locate each entry of the block's trusted_keys.
	TrustedKeys []hclv2.Range
	// config is the config expression, walked by Plugin.ConfigRange; nil
	// when the block has no config.
	config hclsyntax.Expression
}

// Target is an engine identity as written in a lane. Adapter is required;
// the other fields default to "" and Tools to an empty list.
type Target struct {
	Adapter     string   `json:"adapter"`
	Provider    string   `json:"provider"`
	ModelFamily string   `json:"model_family"`
	Model       string   `json:"model"`
	Tools       []string `json:"tools"`
}

// Lane is a `lane "<name>"` block. The adapters of Requested and Fallbacks
// name engine plugins; KnownSubstitutions are identities an engine may
// report instead of the requested one, not launch targets, so their
// adapters are not checked against the plugins.
type Lane struct {
	Name               string   `json:"name"`
	Requested          Target   `json:"requested"`
	KnownSubstitutions []Target `json:"known_substitutions,omitempty"`
	Fallbacks          []Target `json:"fallbacks,omitempty"`
	// Preflight is nil when the lane has no preflight block.
	Preflight *LanePreflight `json:"preflight,omitempty"`
}

// LanePreflight is a lane's `preflight` block.
type LanePreflight struct {
	Live              string `json:"live"`               // "required" | "skip"; default "skip"
	UnsupportedStatic string `json:"unsupported_static"` // "block" | "allow"; default "block"
}

// KeyLimit is one entry of keyed_concurrency, in declaration order.
type KeyLimit struct {
	Key   string `json:"key"`
	Limit int    `json:"limit"`
}

// Graph is the `graph "dag"` block.
type Graph struct {
	Name              string     `json:"name"`
	GlobalConcurrency int        `json:"global_concurrency"` // default 4
	KeyedConcurrency  []KeyLimit `json:"keyed_concurrency,omitempty"`
	StopOnError       bool       `json:"stop_on_error"`
	RetryCapPerNode   int        `json:"retry_cap_per_node"` // retries of a failed required node; default 1
	// Approval lists every node with Node.Approval set, in declaration
	// order: those named by the graph's approval attribute and those that
	// set approval = true themselves.
	Approval []string `json:"approval,omitempty"`
	// Policy names the policy plugins asked, in this order, before every
	// attempt's effects (docs/policies.md).
	Policy []string `json:"policy,omitempty"`
	// PolicyTimeout bounds each policy's answer; default 10s. A policy
	// that does not answer in time pauses the position.
	PolicyTimeout time.Duration `json:"policy_timeout,omitempty"`
	// Nodes are in declaration order.
	Nodes []Node `json:"nodes"`
}

// Node kinds.
const (
	KindRequired  = "required"
	KindOptional  = "optional"
	KindFinalizer = "finalizer"
)

// Node is a `node "<id>"` block, or a `loop "<id>"` block (Loop set). A
// node sets exactly one of Lane and Binding; a loop neither.
type Node struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"` // default "required"
	Lane    string `json:"lane,omitempty"`
	Binding string `json:"binding,omitempty"`
	// Prompt is the template source, evaluated at dispatch time by
	// RenderPrompt against the recorded results. It is template-mode text
	// (as hclsyntax.ParseTemplate reads it), whether the run file wrote a
	// quoted string, a heredoc or prompt_file; a constant prompt is stored
	// with "${" and "%{" escaped as "$${" and "%%{".
	Prompt string `json:"prompt,omitempty"`
	// PromptFile is the absolute path of the prompt_file the prompt was
	// read from, "" when the prompt was written inline. Informational: the
	// text is in Prompt.
	PromptFile string `json:"prompt_file,omitempty"`
	// Input is the node's input as JSON (binding nodes only; nil when
	// absent). Every string in it is template-mode source, rendered at
	// dispatch time by RenderInput: constant strings are stored with "${"
	// and "%{" escaped, and a value computed from results (input.results.x
	// written bare) is stored as the single interpolation "${input.results.x}".
	Input     json.RawMessage `json:"input,omitempty"`
	DependsOn []string        `json:"depends_on,omitempty"`
	RetrySafe bool            `json:"retry_safe"`
	// Timeout bounds one attempt; 0 when the node sets none.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Key names an entry of Graph.KeyedConcurrency, or is "".
	Key string `json:"key,omitempty"`
	// Approval is true when the node sets approval = true or the graph's
	// approval list names it: the node waits for `obversa approve`.
	Approval bool `json:"approval,omitempty"`
	// ForEach is set when the node has for_each: one instance per item.
	ForEach *ForEach `json:"for_each,omitempty"`
	// Loop is set for a loop block: its members and rules.
	Loop  *Loop `json:"loop,omitempty"`
	Range Range `json:"-"`
}

// ForEach is a node's for_each (docs/run-file.md, "for_each"): static
// Items written in the run file, or a dynamic Source over an upstream
// result, rendered when the node's dependencies have passed.
type ForEach struct {
	// Items are a static for_each's instances in order: a list's strings
	// (each the key and the value) or an object's entries in key order.
	Items []ForEachItem `json:"items,omitempty"`
	// Source is a dynamic for_each's template source ("${input.results.…}"),
	// "" for a static one.
	Source string `json:"source,omitempty"`
	// MaxItems bounds the instances; default DefaultMaxItems.
	MaxItems int `json:"max_items"`
}

// ForEachItem is one instance of a static for_each: its key and its value
// as JSON (each.key and each.value in templates).
type ForEachItem struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// Loop is a `loop "<id>"` block's body (docs/run-file.md, "Loops").
type Loop struct {
	// MaxRounds is 1..MaxRoundsLimit; required.
	MaxRounds int `json:"max_rounds"`
	// Review names the member whose verdict ends or repeats a round.
	Review string `json:"review"`
	// Until is the template source of the optional condition checked once
	// every member but the review passed; "" for none.
	Until string `json:"until,omitempty"`
	// Members are the loop's node blocks in declaration order.
	Members []Node `json:"members"`
}

// Range is a source position for messages after decoding: the file as
// named to Decode, and the 1-based line and column where the block starts.
type Range struct {
	Filename string
	Line     int
	Column   int
}
