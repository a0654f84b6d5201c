package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/plugin"
)

// Compile turns a decoded run file into the graph definition and the plan
// of run runID. digests maps each plugin name to the SHA-256 (hex) it is
// pinned to; a plugin without one is an error wrapping ErrUnpinned.
func Compile(rf *hcl.RunFile, runID string, digests map[string]string) (*graph.Definition, *Plan, error) {
	def, err := Definition(rf)
	if err != nil {
		return nil, nil, err
	}
	p := &Plan{
		RunID:     runID,
		Namespace: rf.Storage.Namespace,
		Workspace: Workspace{Root: rf.Workspace.Root, Provider: rf.Workspace.Provider},
		Storage: Storage{
			Directory:                   rf.Storage.Directory,
			MaxEventPayloadBytes:        rf.Storage.MaxEventPayloadBytes,
			MaxBatchBytes:               rf.Storage.MaxBatchBytes,
			MaxArtifactBytes:            rf.Storage.MaxArtifactBytes,
			MaxTotalArtifactBytesPerRun: rf.Storage.MaxTotalArtifactBytesPerRun,
			MaxLogBytes:                 rf.Storage.MaxLogBytes,
			MaxStreamBytes:              rf.Storage.MaxStreamBytes,
			KnownSecretsFromEnv:         rf.Storage.KnownSecretsFromEnv,
		},
		Limits: Limits{TimeoutMS: rf.Limits.Timeout.Milliseconds(), MaxDispatches: rf.Limits.MaxDispatches,
			MaxInputTokens: rf.Limits.MaxInputTokens, MaxOutputTokens: rf.Limits.MaxOutputTokens, StopOnUnmeasured: rf.Limits.StopOnUnmeasured},
		Restart:         Restart{MaxRestarts: rf.Restart.MaxRestarts, InitialBackoffMS: rf.Restart.InitialBackoff.Milliseconds(), MaxBackoffMS: rf.Restart.MaxBackoff.Milliseconds()},
		TeardownGraceMS: rf.TeardownGrace.Milliseconds(),
		Plugins:         []PluginPlan{},
		Lanes:           []LanePlan{},
		Policies:        rf.Graph.Policy,
	}
	if len(rf.Graph.Policy) > 0 {
		p.PolicyTimeoutMS = rf.Graph.PolicyTimeout.Milliseconds()
	}
	for i := range rf.Plugins {
		pp, err := Plugin(&rf.Plugins[i], digests[rf.Plugins[i].Name])
		if err != nil {
			return nil, nil, err
		}
		p.Plugins = append(p.Plugins, pp)
	}
	for _, l := range rf.Lanes {
		lp, err := lanePlan(l)
		if err != nil {
			return nil, nil, err
		}
		p.Lanes = append(p.Lanes, lp)
	}
	if rf.Preflight != nil {
		pf := &Preflight{TimeoutMS: rf.Preflight.Timeout.Milliseconds(), Lanes: []LanePreflight{}}
		for _, l := range rf.Lanes {
			lp := LanePreflight{Lane: l.Name, Live: "skip", UnsupportedStatic: "block"}
			if l.Preflight != nil {
				lp.Live, lp.UnsupportedStatic = l.Preflight.Live, l.Preflight.UnsupportedStatic
			}
			pf.Lanes = append(pf.Lanes, lp)
		}
		p.Preflight = pf
	}
	return def, p, nil
}

// lanePlan is a lane's plan: requested as written, the effective target
// and fallbacks with the provider the lane gives them when they name none
// (hcl.RecoverProvider). A target whose provider stays unknown is an error
// wrapping ErrIdentityUnresolved: the run is refused before any work.
func lanePlan(l hcl.Lane) (LanePlan, error) {
	lp := LanePlan{Name: l.Name, Requested: identity(l.Requested), KnownSubstitutions: []plugin.Identity{}, Fallbacks: []plugin.Identity{}}
	for _, t := range l.KnownSubstitutions {
		lp.KnownSubstitutions = append(lp.KnownSubstitutions, identity(t))
	}
	launch := func(t hcl.Target, where string) (plugin.Identity, error) {
		provider, candidates := hcl.RecoverProvider(l, t)
		if provider == "" {
			return plugin.Identity{}, fmt.Errorf("%w: lane %q %s target (adapter %q) names no provider and the lane gives none (candidates %v)",
				ErrIdentityUnresolved, l.Name, where, t.Adapter, candidates)
		}
		t.Provider = provider
		return identity(t), nil
	}
	var err error
	if lp.Effective, err = launch(l.Requested, "requested"); err != nil {
		return lp, err
	}
	for i, t := range l.Fallbacks {
		f, err := launch(t, fmt.Sprintf("fallbacks[%d]", i))
		if err != nil {
			return lp, err
		}
		lp.Fallbacks = append(lp.Fallbacks, f)
	}
	return lp, nil
}

func identity(t hcl.Target) plugin.Identity {
	tools := t.Tools
	if tools == nil {
		tools = []string{}
	}
	return plugin.Identity{Adapter: t.Adapter, Provider: t.Provider, ModelFamily: t.ModelFamily, Model: t.Model, Tools: tools}
}

func rawOrNull(r json.RawMessage) any {
	if len(r) == 0 {
		return nil
	}
	return r
}

// Canonical returns the RFC 8785 canonical JSON of v: its encoding/json
// text rewritten in one pass (canonicalJSON), or by jcs.Transform when
// that pass does not take the text.
func Canonical(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if out, ok := canonicalJSON(b); ok {
		return out, nil
	}
	return jcs.Transform(b)
}

// Digest returns "sha256:<hex>" of the canonical JSON of v.
func Digest(v any) (string, error) {
	b, err := Canonical(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// AttemptID is the id of the attempt at one position: the digest of
// {namespace, run, node, position} (docs/architecture.md#the-executor). It is the same for every
// try at that position, so a plugin can recognise a repeated attempt.
func AttemptID(namespace, run, node, position string) string {
	if plainASCII(namespace) && plainASCII(run) && plainASCII(node) && plainASCII(position) {
		// The canonical JSON of four plain strings is written directly:
		// its keys in RFC 8785 order, its strings as they are. It is the
		// same text Digest hashes, without a JSON round trip per attempt.
		var buf [256]byte // no allocation for the usual lengths
		b := append(append(buf[:0], `{"namespace":"`...), namespace...)
		b = append(append(b, `","node":"`...), node...)
		b = append(append(b, `","position":"`...), position...)
		b = append(append(b, `","run":"`...), run...)
		b = append(b, `"}`...)
		sum := sha256.Sum256(b)
		var id [len("sha256:") + 2*sha256.Size]byte
		copy(id[:], "sha256:")
		hex.Encode(id[len("sha256:"):], sum[:])
		return string(id[:])
	}
	d, err := Digest(map[string]string{"namespace": namespace, "run": run, "node": node, "position": position})
	if err != nil {
		// Marshalling a map of strings cannot fail.
		panic(err)
	}
	return d
}

// plainASCII reports whether s is printable ASCII without a quote or a
// backslash: RFC 8785 writes such a string between quotes as it is.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// NewRunStarted builds the data of graph:run-started with both digests.
func NewRunStarted(runFile string, def *graph.Definition, p *Plan, now time.Time) (*RunStarted, error) {
	dd, err := Digest(def)
	if err != nil {
		return nil, err
	}
	pd, err := Digest(p)
	if err != nil {
		return nil, err
	}
	return &RunStarted{RunID: p.RunID, Namespace: p.Namespace, RunFile: runFile, Definition: def,
		DefinitionDigest: dd, Plan: p, PlanDigest: pd, StartedAt: now.UTC()}, nil
}

// Check re-computes both digests of a recorded run-started and returns an
// error wrapping ErrDigest when either differs: the stored definition or
// plan was edited.
func (rs *RunStarted) Check() error {
	dd, err := Digest(rs.Definition)
	if err != nil {
		return err
	}
	pd, err := Digest(rs.Plan)
	if err != nil {
		return err
	}
	if dd != rs.DefinitionDigest {
		return fmt.Errorf("%w: definition digest %s, recorded %s", ErrDigest, dd, rs.DefinitionDigest)
	}
	if pd != rs.PlanDigest {
		return fmt.Errorf("%w: plan digest %s, recorded %s", ErrDigest, pd, rs.PlanDigest)
	}
	return rs.Definition.Validate()
}

// Definition compiles the graph of a decoded run file into its stored
// definition (the DAG form, docs/run-file.md), without pinning anything:
// what Compile records and what `obversa graph FILE` draws. The error
// wraps graph.ErrInvalidDefinition; a run file that decoded without
// errors never gives one.
func Definition(rf *hcl.RunFile) (*graph.Definition, error) {
	def := &graph.Definition{
		Name:              rf.Graph.Name,
		GlobalConcurrency: rf.Graph.GlobalConcurrency,
		StopOnError:       rf.Graph.StopOnError,
		RetryCapPerNode:   rf.Graph.RetryCapPerNode,
		KeyedConcurrency:  []graph.KeyLimit{},
		Nodes:             []graph.NodeDef{},
	}
	for _, k := range rf.Graph.KeyedConcurrency {
		def.KeyedConcurrency = append(def.KeyedConcurrency, graph.KeyLimit{Key: k.Key, Limit: k.Limit})
	}
	approval := map[string]bool{}
	for _, id := range rf.Graph.Approval {
		approval[id] = true
	}
	for _, n := range rf.Graph.Nodes {
		def.Nodes = append(def.Nodes, nodeDef(n, approval))
	}
	if err := def.Validate(); err != nil {
		return nil, err
	}
	return def, nil
}

// Plugin is the plan of one plugin of a run file pinned to sha256 (hex):
// what Compile records for it and what launching it needs. An empty
// sha256 is an error wrapping ErrUnpinned.
func Plugin(pl *hcl.Plugin, sha256 string) (PluginPlan, error) {
	if sha256 == "" {
		return PluginPlan{}, fmt.Errorf("%w: plugin %q (%s)", ErrUnpinned, pl.Name, pl.Path)
	}
	cd, err := Digest(rawOrNull(pl.Config))
	if err != nil {
		return PluginPlan{}, fmt.Errorf("plugin %q config: %w", pl.Name, err)
	}
	c := pl.Confine
	return PluginPlan{
		Name: pl.Name, Type: pl.Type, SHA256: sha256, Source: pl.Path, Args: pl.Args,
		Env: pl.Env, PassEnv: pl.PassEnv, Config: pl.Config, ConfigDigest: cd,
		Confine:        &Confine{Write: c.Write, DenyRead: c.DenyRead, Network: c.Network, MemoryBytes: c.MemoryBytes, Required: c.Required},
		StartTimeoutMS: ceilMS(pl.StartTimeout),
	}, nil
}

// nodeDef compiles one vertex of the run file: a node (with its for_each)
// or a loop with its members.
func nodeDef(n hcl.Node, approval map[string]bool) graph.NodeDef {
	deps := n.DependsOn
	if deps == nil {
		deps = []string{}
	}
	d := graph.NodeDef{
		ID: n.ID, Kind: n.Kind, Lane: n.Lane, Binding: n.Binding, Prompt: n.Prompt,
		Input: n.Input, DependsOn: deps, RetrySafe: n.RetrySafe,
		TimeoutMS: n.Timeout.Milliseconds(), Key: n.Key, Approval: n.Approval || approval[n.ID],
	}
	if fe := n.ForEach; fe != nil {
		d.ForEach = &graph.ForEachDef{Source: fe.Source, MaxItems: fe.MaxItems}
		for _, it := range fe.Items {
			d.ForEach.Items = append(d.ForEach.Items, graph.ForEachItem{Key: it.Key, Value: it.Value})
		}
	}
	if l := n.Loop; l != nil {
		d.Loop = &graph.LoopDef{MaxRounds: l.MaxRounds, Review: l.Review, Until: l.Until, Members: []graph.NodeDef{}}
		for _, m := range l.Members {
			d.Loop.Members = append(d.Loop.Members, nodeDef(m, approval))
		}
	}
	return d
}

// ceilMS is d in whole milliseconds, rounded up, so that a positive bound
// below a millisecond is not read back as 0, the default.
func ceilMS(d time.Duration) int64 {
	n := d.Milliseconds()
	if time.Duration(n)*time.Millisecond < d {
		n++
	}
	return n
}
