package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/obversa/obversa/plugin"
)

// Cases about Run.

// outputSchema is the schema the kit asks structured output for.
var outputSchema = json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`)

// scenarioRun launches a configured plugin, asks it for sc and runs once.
// ok is false with a verdict when the case cannot proceed.
func (k *kit) scenarioRun(ctx context.Context, caseName string, sc plugin.Scenario) (transcript, verdict, bool) {
	s, req, v, ok := k.scenarioSession(ctx, caseName, sc)
	if !ok {
		return transcript{}, v, false
	}
	defer s.close()
	return collect(ctx, s, req), verdict{}, true
}

// scenarioSession launches a configured plugin and asks it for sc, for a
// Run of req; the caller closes s. ok is false with a verdict (skip when
// the plugin cannot be asked for sc) when the case cannot proceed.
func (k *kit) scenarioSession(ctx context.Context, caseName string, sc plugin.Scenario) (s *session, req plugin.RunRequest, v verdict, ok bool) {
	if can, why := k.canAsk(sc); !can {
		return nil, req, skip("%s", why), false
	}
	s, err := k.launchConfigured(ctx)
	if err != nil {
		return nil, req, fail("%v", err), false
	}
	req = k.request(caseName)
	if err := k.ask(ctx, s, &req, sc); err != nil {
		s.close()
		return nil, req, fail("%v", err), false
	}
	return s, req, verdict{}, true
}

// ordinaryRun launches a configured plugin and runs req once.
func (k *kit) ordinaryRun(ctx context.Context, req plugin.RunRequest) (transcript, error) {
	s, err := k.launchConfigured(ctx)
	if err != nil {
		return transcript{}, err
	}
	defer s.close()
	return collect(ctx, s, req), nil
}

func caseRunParts(ctx context.Context, k *kit) verdict {
	t, err := k.ordinaryRun(ctx, k.request("run.parts"))
	if err != nil {
		return fail("%v", err)
	}
	var problems []string
	for i, ev := range t.events {
		if err := ev.Validate(); err != nil {
			problems = append(problems, fmt.Sprintf("event %d: %v", i+1, err))
		}
	}
	if t.after > 0 {
		problems = append(problems, fmt.Sprintf("%d message(s) after the terminal one", t.after))
	}
	if st := t.status(); st != nil && t.terminal != nil {
		problems = append(problems, fmt.Sprintf("the stream ended with %v after its terminal message", st))
	}
	r := t.result()
	if r == nil {
		return fail("the Run ended with %s", t.outcome())
	}
	problems = append(problems, resultProblems(r)...)
	seen := fmt.Sprintf("%d event(s), then %s", len(t.events), t.outcome())
	if len(problems) > 0 {
		return fail("%s: %s", seen, strings.Join(problems, "; "))
	}
	return pass("%s, nothing after it", seen)
}

// resultProblems lists what is wrong with a result's parts: unknown
// kinds, invalid JSON, and anything but exactly one final text or
// structured part.
func resultProblems(r *plugin.RunResult) []string {
	var problems []string
	finals := 0
	for i, p := range r.Parts {
		if !p.Kind.Valid() {
			problems = append(problems, fmt.Sprintf("part %d has kind %s", i+1, p.Kind))
		}
		if len(p.JSON) > 0 && !json.Valid(p.JSON) {
			problems = append(problems, fmt.Sprintf("part %d (%s) carries invalid JSON", i+1, p.Kind))
		}
		if p.Kind == plugin.PartStructured && len(p.JSON) == 0 {
			problems = append(problems, fmt.Sprintf("part %d is structured without JSON", i+1))
		}
		if p.Final {
			finals++
			if p.Kind != plugin.PartText && p.Kind != plugin.PartStructured {
				problems = append(problems, fmt.Sprintf("final part %d is %s, not text or structured", i+1, p.Kind))
			}
		}
	}
	if finals != 1 {
		problems = append(problems, fmt.Sprintf("%d final parts, want exactly 1", finals))
	}
	return problems
}

func caseRunStructured(ctx context.Context, k *kit) verdict {
	switch {
	case k.desc == nil:
		return skip("no Describe answer to read the capabilities from (see describe)")
	case !k.desc.Capabilities.StructuredOutput:
		return skip("the plugin does not declare structured output")
	}
	req := k.request("run.structured")
	req.Prompt = `Answer in JSON: {"answer": "hello"}.`
	req.OutputSchema = outputSchema
	t, err := k.ordinaryRun(ctx, req)
	if err != nil {
		return fail("%v", err)
	}
	r := t.result()
	if r == nil {
		return fail("the Run ended with %s", t.outcome())
	}
	for _, p := range r.Parts {
		if p.Final && p.Kind == plugin.PartStructured && json.Valid(p.JSON) {
			return pass("final structured part %s", cut(string(p.JSON), 120))
		}
	}
	return fail("asked for structured output, got %s", t.outcome())
}

// usageProblems checks a transcript's usage: events consistent with the
// result, and no zero counts for an answer that cost tokens.
func usageProblems(t *transcript) []string {
	r := t.result()
	var problems []string
	var last *plugin.Usage
	for i, ev := range t.events {
		if ev.Kind != plugin.EventUsage {
			continue
		}
		if err := ev.Usage.Validate(); err != nil {
			problems = append(problems, fmt.Sprintf("usage event %d: %v", i+1, err))
		}
		u := ev.Usage
		last = &u
		if !r.Usage.Known && u.Known {
			problems = append(problems, fmt.Sprintf("usage event %s while the result's usage is unknown", usageString(u)))
		}
	}
	if err := r.Usage.Validate(); err != nil {
		problems = append(problems, fmt.Sprintf("result usage: %v", err))
	}
	if r.Usage.Known && last != nil && *last != r.Usage {
		problems = append(problems, fmt.Sprintf("the last usage event %s differs from the result's %s", usageString(*last), usageString(r.Usage)))
	}
	u := r.Usage
	if u.Known && u.Input == 0 && u.Output == 0 && u.CacheRead == 0 && u.CacheCreation == 0 && answerText(r) != "" {
		problems = append(problems, "reported zero tokens for a prompt and a non-empty answer: usage that was not measured must be unknown, never zero")
	}
	return problems
}

func caseRunUsage(ctx context.Context, k *kit) verdict {
	t, err := k.ordinaryRun(ctx, k.request("run.usage"))
	if err != nil {
		return fail("%v", err)
	}
	r := t.result()
	if r == nil {
		return fail("the ordinary Run ended with %s", t.outcome())
	}
	problems := usageProblems(&t)
	seen := "ordinary Run: usage " + usageString(r.Usage)
	sc := plugin.Scenario{Kind: plugin.ScenarioUnknownUsage}
	if can, why := k.canAsk(sc); can {
		ut, v, ok := k.scenarioRun(ctx, "run.usage", sc)
		if !ok {
			return v
		}
		ur := ut.result()
		switch {
		case ur == nil:
			problems = append(problems, "unknown-usage scenario ended with "+ut.outcome())
		case ur.Usage.Known:
			problems = append(problems, fmt.Sprintf("unknown-usage scenario reported %s instead of unknown", usageString(ur.Usage)))
		default:
			for _, p := range usageProblems(&ut) {
				problems = append(problems, "unknown-usage scenario: "+p)
			}
		}
		if ur != nil {
			seen += "; unknown-usage scenario: usage " + usageString(ur.Usage)
		}
	} else {
		seen += "; unknown-usage scenario not run: " + why
	}
	if len(problems) > 0 {
		return fail("%s: %s", seen, strings.Join(problems, "; "))
	}
	return pass("%s", seen)
}

func caseRunTools(ctx context.Context, k *kit) verdict {
	t, v, ok := k.scenarioRun(ctx, "run.tools", plugin.Scenario{Kind: plugin.ScenarioToolEvents})
	if !ok {
		return v
	}
	r := t.result()
	if r == nil {
		return fail("the Run ended with %s", t.outcome())
	}
	var streamed, kept []toolEvent
	var problems []string
	used := map[string]bool{}
	for _, ev := range t.events {
		switch ev.Kind {
		case plugin.EventToolUse:
			used[ev.ToolID] = true
			streamed = append(streamed, toolEvent{"use", ev.ToolID, ev.ToolName})
		case plugin.EventToolResult:
			if !used[ev.ToolID] {
				problems = append(problems, fmt.Sprintf("tool result %q streamed before any tool use with that id", ev.ToolID))
			}
			streamed = append(streamed, toolEvent{"result", ev.ToolID, ev.ToolName})
		}
	}
	finalAt := -1
	for i, p := range r.Parts {
		switch p.Kind {
		case plugin.PartToolUse:
			kept = append(kept, toolEvent{"use", p.ToolID, p.ToolName})
		case plugin.PartToolResult:
			kept = append(kept, toolEvent{"result", p.ToolID, p.ToolName})
		default:
			if p.Final && finalAt < 0 {
				finalAt = i
			}
			continue
		}
		if finalAt >= 0 {
			problems = append(problems, fmt.Sprintf("tool part %d comes after the final part", i+1))
		}
	}
	if results := len(streamed) - countUses(streamed); countUses(streamed) == 0 || results == 0 {
		problems = append(problems, fmt.Sprintf("the scenario streamed %d tool event(s); want a tool use and its result", len(streamed)))
	}
	if fmt.Sprint(streamed) != fmt.Sprint(kept) {
		problems = append(problems, fmt.Sprintf("streamed %v, the result keeps %v", streamed, kept))
	}
	seen := fmt.Sprintf("streamed %v; result parts %v", streamed, kept)
	if len(problems) > 0 {
		return fail("%s: %s", seen, strings.Join(problems, "; "))
	}
	return pass("%s, before the final part", seen)
}

// toolEvent is a tool use or result as streamed or kept.
type toolEvent struct{ kind, id, name string }

func countUses(ts []toolEvent) int {
	n := 0
	for _, t := range ts {
		if t.kind == "use" {
			n++
		}
	}
	return n
}

func caseRunLateFinal(ctx context.Context, k *kit) verdict {
	t, v, ok := k.scenarioRun(ctx, "run.late_final", plugin.Scenario{Kind: plugin.ScenarioLateFinal})
	if !ok {
		return v
	}
	r := t.result()
	if r == nil {
		return fail("the final answer was lost: the Run ended with %s", t.outcome())
	}
	if _, ok := r.Final(); !ok {
		return fail("the result has no final part")
	}
	return pass("kept: %s", t.outcome())
}

func caseRunWorkspaceRead(ctx context.Context, k *kit) verdict {
	dir, err := os.MkdirTemp("", "obversa-conformance-workspace-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(dir)
	req := k.request("run.workspace_read")
	req.WorkspaceDir = dir
	req.WorkspaceMode = plugin.WorkspaceModeRead
	req.Tools = nil
	req.Target.Tools = []string{}
	t, err := k.ordinaryRun(ctx, req)
	if err != nil {
		return fail("%v", err)
	}
	if f := t.failure(); f != nil && f.Kind == plugin.FailureInvalidConfig {
		return pass("%s", t.outcome())
	}
	return fail("the Run ended with %s", t.outcome())
}
