//go:build failpoints

package watchdog

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
	// passRound is the round from which a loop's review passes (after
	// max_rounds: never, the loop is exhausted); reviewers names each
	// review member's loop.
	passRound map[string]int
	reviewers map[string]string
	// keys are the items a node's result lists (a dynamic for_each's
	// source).
	keys map[string][]string
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

// newSimCase draws a case from seed: nodes, loops (rounds that fail then
// pass, or run out) and for_each nodes (static items, or items listed by
// an upstream result), chained and fanned out at random.
func newSimCase(seed int64) *simCase {
	r := rand.New(rand.NewSource(seed))
	c := &simCase{seed: seed, decision: map[string]string{}, fails: map[string]bool{},
		passRound: map[string]int{}, reviewers: map[string]string{}, keys: map[string][]string{}}
	n := 2 + r.Intn(7)
	def := &graph.Definition{Name: "dag", GlobalConcurrency: 1 + r.Intn(4), KeyedConcurrency: []graph.KeyLimit{},
		RetryCapPerNode: r.Intn(2), StopOnError: r.Intn(8) == 0}
	var plain []string    // non-finalizer vertices so far
	var planners []string // binding nodes whose result lists keys
	finalizers, units := 0, 0
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
		}
		switch x := r.Intn(10); {
		case nd.Kind != graph.KindFinalizer && x < 2:
			units += c.simLoop(r, &nd)
		case nd.Kind != graph.KindFinalizer && x < 4:
			units += c.simForEach(r, &nd, planners)
		default:
			units++
			c.simNode(r, &nd, graph.Position(nd.ID, 1))
			if nd.Binding != "" && nd.Kind != graph.KindFinalizer && r.Intn(3) == 0 {
				c.keys[nd.ID] = simKeys(r, r.Intn(6))
				planners = append(planners, nd.ID)
			}
			if r.Intn(7) == 0 {
				nd.Approval = true
				c.decision[nd.ID] = graph.DecisionAllow
				if r.Intn(3) == 0 {
					c.decision[nd.ID] = graph.DecisionDeny
				}
			}
		}
		if nd.Kind != graph.KindFinalizer {
			plain = append(plain, nd.ID)
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
			hit := 1 + r.Intn(4*units+4)
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

// simNode makes nd an engine node (30%) or a binding node, whose first
// attempt (at position first) the binding fails one time in five.
func (c *simCase) simNode(r *rand.Rand, nd *graph.NodeDef, first string) {
	if r.Intn(10) < 3 {
		nd.Lane, nd.Prompt = "w", "do "+nd.ID
		return
	}
	nd.Binding, nd.Input = "sim", json.RawMessage(`{"node":"`+nd.ID+`"}`)
	if r.Intn(5) == 0 {
		c.fails[first] = true
	}
}

// simLoop makes nd a loop of a writer (and sometimes a second worker) and
// a reviewer whose verdict passes from a drawn round on; it returns how
// many units a round has.
func (c *simCase) simLoop(r *rand.Rand, nd *graph.NodeDef) int {
	id := nd.ID
	l := &graph.LoopDef{MaxRounds: 1 + r.Intn(3), Review: id + "r"}
	w := graph.NodeDef{ID: id + "w", Kind: graph.KindRequired, DependsOn: []string{}, RetrySafe: r.Intn(2) == 0}
	c.simNode(r, &w, graph.MemberPosition(id, 1, w.ID, 1))
	if w.Lane != "" {
		w.Prompt = "write " + id + " round ${loop.round}${loop.round > 1 ? \" fixing: ${loop.findings}\" : \"\"}"
	}
	l.Members = append(l.Members, w)
	if r.Intn(3) == 0 {
		x := graph.NodeDef{ID: id + "x", Kind: graph.KindRequired, DependsOn: []string{}, RetrySafe: r.Intn(2) == 0}
		c.simNode(r, &x, graph.MemberPosition(id, 1, x.ID, 1))
		l.Members = append(l.Members, x)
	}
	rv := graph.NodeDef{ID: l.Review, Kind: graph.KindRequired, DependsOn: []string{w.ID}, RetrySafe: r.Intn(2) == 0}
	if r.Intn(10) < 3 {
		rv.Lane, rv.Prompt = "w", "review ${jsonencode(input.results."+w.ID+")}"
	} else {
		rv.Binding, rv.Input = "sim", json.RawMessage(`{"node":"`+rv.ID+`"}`)
	}
	l.Members = append(l.Members, rv)
	if r.Intn(4) == 0 {
		l.Until = "${loop.round > 1}" // round 1 skips its review
	}
	c.passRound[id] = 1 + r.Intn(l.MaxRounds+1)
	c.reviewers[rv.ID] = id
	nd.Loop, nd.RetrySafe = l, false
	return len(l.Members) * l.MaxRounds
}

// simForEach makes nd a for_each node of binding instances over static
// items, or over the keys an upstream planner's result lists; it returns
// how many units it may have.
func (c *simCase) simForEach(r *rand.Rand, nd *graph.NodeDef, planners []string) int {
	nd.Binding, nd.Input = "sim", json.RawMessage(`{"node":"`+nd.ID+`","key":"${each.key}"}`)
	fe := &graph.ForEachDef{MaxItems: graph.DefaultMaxItems}
	var keys []string
	if len(planners) > 0 && r.Intn(2) == 0 {
		p := planners[r.Intn(len(planners))]
		if !slices.Contains(nd.DependsOn, p) {
			nd.DependsOn = append(nd.DependsOn, p)
		}
		fe.Source = "${input.results." + p + ".keys}"
		keys = c.keys[p]
		if r.Intn(4) == 0 {
			fe.MaxItems = 1 + r.Intn(5) // sometimes fewer than the keys: FOR_EACH_LIMIT
		}
	} else {
		keys = simKeys(r, r.Intn(4))
		for _, k := range keys {
			b, _ := json.Marshal(k)
			fe.Items = append(fe.Items, graph.ForEachItem{Key: k, Value: b})
		}
	}
	for _, k := range keys {
		if r.Intn(6) == 0 {
			c.fails[graph.InstancePosition(nd.ID, k, 1)] = true
		}
	}
	nd.ForEach = fe
	return max(1, len(keys))
}

// simKeys draws n distinct keys, some of which need escaping in a
// position.
func simKeys(r *rand.Rand, n int) []string {
	pool := []string{"a", "b/c", "d e", "f%", "g]h", "ü", "i.go"}
	r.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	return append([]string{}, pool[:n]...)
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
	outputs map[string]json.RawMessage // the binding's last output by position
	engines string                     // the engine's effects file
}

func newEffects(dir string) *effects {
	return &effects{byPos: map[string]int{}, outputs: map[string]json.RawMessage{}, engines: filepath.Join(dir, "engine-effects.log")}
}

// result is what a person who checked says an attempt at position
// produced, given that it took effect: the binding's output, or an engine
// reviewer's verdict (another engine's text is not needed: null).
func (e *effects) result(c *simCase, position string) json.RawMessage {
	e.mu.Lock()
	out, ok := e.outputs[position]
	e.mu.Unlock()
	if ok {
		return out
	}
	if loop, ok := c.reviewers[simNodeOf(position)]; ok {
		round, _ := strconv.Atoi(strings.Split(position, "/")[2])
		if round >= c.passRound[loop] {
			return json.RawMessage(`{"status":"pass","summary":"ok"}`)
		}
		return json.RawMessage(fmt.Sprintf(`{"status":"fail","summary":"round %d: not yet","findings":[]}`, round))
	}
	return nil
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
	out, _ := json.Marshal(map[string]any{"done": req.Position, "keys": b.c.keys[req.NodeID]})
	if loop, ok := b.c.reviewers[req.NodeID]; ok {
		// dag/<loop>/<round>/<member>/<n>: the verdict of this round.
		round, _ := strconv.Atoi(strings.Split(req.Position, "/")[2])
		out = json.RawMessage(fmt.Sprintf(`{"exit_code":1,"stdout":"","stderr":"round %d: not yet"}`, round))
		if round >= b.c.passRound[loop] {
			out = json.RawMessage(`{"exit_code":0,"stdout":"ok","stderr":""}`)
		}
	}
	b.e.mu.Lock()
	b.e.byPos[req.Position]++
	b.e.outputs[req.Position] = out
	b.e.mu.Unlock()
	return out, nil
}

// engine returns the case's mock engine, logging effects to e: an engine
// reviewer's verdict fails before its loop's pass round and passes from
// it on, selected by position so that it holds across restarts.
func (e *effects) engine(c *simCase) (*enginetest.Engine, error) {
	cfg := enginetest.Config{EffectsFile: e.engines}
	for member, loop := range c.reviewers {
		for round := 1; round < c.passRound[loop]; round++ {
			cfg.Responses = append(cfg.Responses, enginetest.Rule{Node: member, PositionContains: fmt.Sprintf("dag/%s/%d/", loop, round),
				Response: enginetest.Response{JSON: json.RawMessage(fmt.Sprintf(`{"status":"fail","summary":"round %d: not yet","findings":[{"reviewer":%q,"evidence":"not yet"}]}`, round, member))}})
		}
		cfg.Responses = append(cfg.Responses, enginetest.Rule{Node: member, Response: enginetest.Response{JSON: json.RawMessage(`{"status":"pass","summary":"ok"}`)}})
	}
	return enginetest.Configured(cfg)
}

// simNodeOf returns the node a position is of: "dag/<node>/<n>",
// "dag/<node>[<key>]/<n>" or "dag/<loop>/<round>/<member>/<n>".
func simNodeOf(position string) string {
	parts := strings.Split(strings.TrimPrefix(position, "dag/"), "/")
	if len(parts) == 4 {
		return parts[2]
	}
	node, _, _ := strings.Cut(parts[0], "[")
	return node
}

// simUnitOf returns the unit a position is of: the position without its
// attempt number.
func simUnitOf(position string) string {
	return position[:strings.LastIndex(position, "/")]
}
