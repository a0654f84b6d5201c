//go:build failpoints

package watchdog

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/sdk/enginetest"
)

// simCase is one seeded graph of the crash simulation: a random graph, how
// a person answers its approvals, which first attempts fail, and the
// schedules by which the worker, the watchdog or both are killed.
type simCase struct {
	seed     int64
	def      *graph.Definition
	decision map[string]string // node → allow | deny, for approval nodes
	fails    map[string]bool   // position → the binding fails it (before any effect)
	// schedules are the kill schedules the case is run with, each from
	// scratch: a schedule's kills fire in order, once each.
	schedules [][]simKill
	// policy is the verdict the simulated policy plugin gives each node
	// (sim_policy_test.go); nil when the case asks no policy.
	policy map[string]string
	// limits are the case's token budgets (zero: none).
	limits plan.Limits
}

// simSchedules is how many kill schedules each seeded graph is run with:
// a case is one graph under one schedule, all checked against one run of
// the graph without kills.
const simSchedules = 3

// Who a kill stops.
const (
	killWorker   = "worker"
	killWatchdog = "watchdog"
	killBoth     = "both"
)

// simKill stops a process at its hit-th failpoint (counted from its
// start): a worker's points for killWorker and killBoth, the watchdog's
// for killWatchdog.
type simKill struct {
	who string
	hit int
}

func (k simKill) String() string { return fmt.Sprintf("%s@%d", k.who, k.hit) }

// newSimCase draws a case from seed.
func newSimCase(seed int64) *simCase {
	r := rand.New(rand.NewSource(seed))
	c := &simCase{seed: seed, decision: map[string]string{}, fails: map[string]bool{}}
	n := 2 + r.Intn(7)
	def := &graph.Definition{Name: "dag", GlobalConcurrency: 1 + r.Intn(4), KeyedConcurrency: []graph.KeyLimit{},
		RetryCapPerNode: r.Intn(2), StopOnError: r.Intn(8) == 0}
	var plain []string // non-finalizers so far
	finalizers := 0
	for i := 0; i < n; i++ {
		nd := graph.NodeDef{ID: fmt.Sprintf("n%d", i), Kind: graph.KindRequired, DependsOn: []string{}, RetrySafe: r.Intn(2) == 0}
		switch x := r.Intn(20); {
		case x < 3 && finalizers < 2 && i > 0:
			nd.Kind = graph.KindFinalizer
			finalizers++
		case x < 6:
			nd.Kind = graph.KindOptional
		}
		if nd.Kind != graph.KindFinalizer {
			for _, p := range plain {
				if r.Intn(3) == 0 {
					nd.DependsOn = append(nd.DependsOn, p)
				}
			}
			if len(plain) > 0 && len(nd.DependsOn) == 0 && r.Intn(2) == 0 {
				nd.DependsOn = append(nd.DependsOn, plain[len(plain)-1]) // chains
			}
			plain = append(plain, nd.ID)
		}
		if r.Intn(10) < 3 {
			nd.Lane, nd.Prompt = "w", "do "+nd.ID
		} else {
			nd.Binding, nd.Input = "sim", json.RawMessage(`{"node":"`+nd.ID+`"}`)
			if r.Intn(5) == 0 {
				c.fails[graph.Position(nd.ID, 1)] = true
			}
		}
		if r.Intn(7) == 0 {
			nd.Approval = true
			c.decision[nd.ID] = graph.DecisionAllow
			if r.Intn(3) == 0 {
				c.decision[nd.ID] = graph.DecisionDeny
			}
		}
		def.Nodes = append(def.Nodes, nd)
	}
	c.def = def
	// Kill points: most schedules kill once, some twice or more, some
	// never.
	for range simSchedules {
		var kills []simKill
		for k := r.Intn(4); k > 0; k-- {
			who := []string{killWorker, killWorker, killWatchdog, killBoth}[r.Intn(4)]
			hit := 1 + r.Intn(4*n+4)
			if who == killWatchdog {
				hit = 1 + r.Intn(4)
			}
			kills = append(kills, simKill{who: who, hit: hit})
		}
		c.schedules = append(c.schedules, kills)
	}
	c.drawPolicyAndBudget(seed)
	return c
}

// plan returns the case's plan for run id under storage dir.
func (c *simCase) plan(dir, id string) *plan.Plan {
	t := plugin.Identity{Adapter: "mock", Provider: "local", ModelFamily: "scripted", Model: "m1", Tools: []string{}}
	p := &plan.Plan{RunID: id, Namespace: "default", Storage: plan.Storage{Directory: dir},
		Workspace: plan.Workspace{Root: filepath.Join(dir, "workspace"), Provider: "none"}, TeardownGraceMS: 100,
		Restart: plan.Restart{MaxRestarts: 10, InitialBackoffMS: 0, MaxBackoffMS: 0},
		Plugins: []plan.PluginPlan{}, Limits: c.limits,
		Lanes: []plan.LanePlan{{Name: "w", Requested: t, Effective: t, KnownSubstitutions: []plugin.Identity{}, Fallbacks: []plugin.Identity{}}}}
	if c.policy != nil {
		p.Policies = []string{simPolicyName}
	}
	return p
}

// effects is the side-effect log of one case: every time node code took
// effect, by position. The binding writes it in memory; the engine writes
// its effects file (enginetest's effects_file).
type effects struct {
	mu      sync.Mutex
	byPos   map[string]int
	engines string // the engine's effects file
}

func newEffects(dir string) *effects {
	return &effects{byPos: map[string]int{}, engines: filepath.Join(dir, "engine-effects.log")}
}

// count returns every position's effect count, the engine's included.
func (e *effects) count() map[string]int {
	e.mu.Lock()
	out := map[string]int{}
	for p, n := range e.byPos {
		out[p] += n
	}
	e.mu.Unlock()
	b, _ := os.ReadFile(e.engines)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(line); len(f) >= 2 {
			out[f[1]]++
		}
	}
	return out
}

// simBinding is the node binding of the simulation: its effect is a line
// in the side-effect log; a position the case fails fails before any
// effect. It does nothing once its worker is dead (a plugin dies with
// its worker).
type simBinding struct {
	c    *simCase
	e    *effects
	dead *atomic.Bool
}

func (b *simBinding) Describe(context.Context) (*plugin.Description, error) {
	return &plugin.Description{Name: "sim", Version: "1"}, nil
}

func (b *simBinding) Configure(context.Context, json.RawMessage) ([]plugin.Diagnostic, error) {
	return nil, nil
}

func (b *simBinding) Invoke(ctx context.Context, req plugin.InvokeRequest) (json.RawMessage, error) {
	if b.dead.Load() || ctx.Err() != nil {
		return nil, &plugin.Failure{Kind: plugin.FailureAborted, Message: "the worker is gone"}
	}
	if b.c.fails[req.Position] {
		return nil, &plugin.Failure{Kind: plugin.FailureTransient, Message: "scripted failure of " + req.Position}
	}
	b.e.mu.Lock()
	b.e.byPos[req.Position]++
	b.e.mu.Unlock()
	return json.RawMessage(`{"done":"` + req.Position + `"}`), nil
}

// engine returns the case's mock engine, logging effects to e.
func (e *effects) engine() (*enginetest.Engine, error) {
	return enginetest.Configured(enginetest.Config{EffectsFile: e.engines})
}
