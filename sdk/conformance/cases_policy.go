package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/obversa/obversa/plugin"
)

// Cases of the Policy service (docs/policies.md).

// decideLimit bounds one Decide call of the kit: a policy sits between
// the host's dispatch decision and the attempt, so it must answer fast.
const decideLimit = 5 * time.Second

// concurrentDecides is how many Decide calls policy.concurrency makes at
// once.
const concurrentDecides = 8

// action returns the Decide request for an attempt of kind with prompt or
// input, with a fresh attempt id, as the host would send it.
func (k *kit) action(caseName string, kind plugin.ActionKind, prompt string, input json.RawMessage) plugin.DecideRequest {
	r := k.request(caseName)
	req := plugin.DecideRequest{RunID: r.RunID, NodeID: r.NodeID, Position: r.Position, AttemptID: r.AttemptID,
		Attempt: 1, Kind: kind, NodeKind: "required"}
	if kind == plugin.ActionEngine {
		req.Lane, req.Target, req.Prompt = "conformance", k.target, prompt
	} else {
		req.Binding, req.Input = "shell", input
	}
	return req
}

// decide asks once, within decideLimit.
func decide(ctx context.Context, s *session, req plugin.DecideRequest) (*plugin.Decision, time.Duration, error) {
	dctx, cancel := context.WithTimeout(ctx, decideLimit)
	defer cancel()
	start := time.Now()
	d, err := s.policy.Decide(dctx, req)
	return d, time.Since(start), err
}

func casePolicyDecide(ctx context.Context, k *kit) verdict {
	s, err := k.launchConfigured(ctx)
	if err != nil {
		return fail("%v", err)
	}
	defer s.close()
	reqs := []plugin.DecideRequest{
		k.action("policy.decide", plugin.ActionEngine, defaultPrompt, nil),
		k.action("policy.decide", plugin.ActionBinding, "", json.RawMessage(`{"command":["true"]}`)),
	}
	var seen []string
	for _, req := range reqs {
		var first plugin.Verdict
		for try := range 2 {
			d, took, err := decide(ctx, s, req)
			switch {
			case err != nil:
				return fail("%s action: Decide: %v", req.Kind, err)
			case d.Reason == "" && d.Verdict != plugin.VerdictAllow:
				return fail("%s action: %s without a reason: a person must be told why", req.Kind, d.Verdict)
			case try == 1 && d.Verdict != first:
				return fail("%s action: %s, then %s when asked again", req.Kind, first, d.Verdict)
			case try == 0:
				first = d.Verdict
				seen = append(seen, fmt.Sprintf("%s action: %s in %s", req.Kind, describeDecision(d), took.Round(time.Millisecond)))
			}
		}
	}
	return pass("%s; the same when asked again", strings.Join(seen, "; "))
}

func casePolicyActions(ctx context.Context, k *kit) verdict {
	if len(k.opts.Actions) == 0 {
		return skip("the conformance options name no actions")
	}
	s, err := k.launchConfigured(ctx)
	if err != nil {
		return fail("%v", err)
	}
	defer s.close()
	var seen, wrong []string
	for i, a := range k.opts.Actions {
		name := a.Name
		if name == "" {
			name = fmt.Sprintf("actions[%d]", i)
		}
		d, _, err := decide(ctx, s, k.action("policy.actions", a.Kind, a.Prompt, a.Input))
		switch {
		case err != nil:
			wrong = append(wrong, fmt.Sprintf("%s: want %s, Decide failed: %v", name, a.Want, err))
		case d.Verdict != a.Want:
			wrong = append(wrong, fmt.Sprintf("%s: want %s, got %s", name, a.Want, describeDecision(d)))
		default:
			seen = append(seen, fmt.Sprintf("%s: %s", name, describeDecision(d)))
		}
	}
	if len(wrong) > 0 {
		return fail("%s", strings.Join(wrong, "; "))
	}
	return pass("%s", strings.Join(seen, "; "))
}

func casePolicyRobust(ctx context.Context, k *kit) verdict {
	s, err := k.launchConfigured(ctx)
	if err != nil {
		return fail("%v", err)
	}
	defer s.close()
	reqs := []plugin.DecideRequest{
		k.action("policy.robust", plugin.ActionBinding, "", json.RawMessage(`[1, "not an object"]`)),
		k.action("policy.robust", plugin.ActionEngine, "", nil),
	}
	var seen []string
	for _, req := range reqs {
		d, _, err := decide(ctx, s, req)
		var f *plugin.Failure
		switch {
		case err == nil:
			seen = append(seen, fmt.Sprintf("%s action: %s", req.Kind, describeDecision(d)))
		case errors.As(err, &f):
			seen = append(seen, fmt.Sprintf("%s action: refused (%v)", req.Kind, f))
		default:
			return fail("%s action: neither answered nor refused with a typed failure: %v", req.Kind, err)
		}
	}
	if err := s.serving(ctx); err != nil {
		return fail("%s; %v", strings.Join(seen, "; "), err)
	}
	return pass("%s; the plugin keeps serving", strings.Join(seen, "; "))
}

func casePolicyConcurrency(ctx context.Context, k *kit) verdict {
	s, err := k.launchConfigured(ctx)
	if err != nil {
		return fail("%v", err)
	}
	defer s.close()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	start := time.Now()
	errs := make([]error, concurrentDecides)
	var wg sync.WaitGroup
	for i := range concurrentDecides {
		req := k.action("policy.concurrency", plugin.ActionEngine, defaultPrompt, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.policy.Decide(cctx, req)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fail("call %d of %d: %v", i+1, concurrentDecides, err)
		}
	}
	return pass("%d calls answered in %s", concurrentDecides, time.Since(start).Round(time.Millisecond))
}

// describeDecision is a decision as the report shows it.
func describeDecision(d *plugin.Decision) string {
	if d.Reason == "" {
		return string(d.Verdict)
	}
	return fmt.Sprintf("%s (%s)", d.Verdict, cut(d.Reason, 120))
}
