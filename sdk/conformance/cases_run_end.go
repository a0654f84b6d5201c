package conformance

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/obversa/obversa/plugin"
)

// Cases about a Run that ends without an answer: cancelled by the host,
// or failing with a typed failure.

// settleLimit is how long a cancelled Run may take to stop (docs/writing-plugins.md).
const settleLimit = 3 * time.Second

func caseRunCancel(ctx context.Context, k *kit) verdict {
	s, req, v, ok := k.scenarioSession(ctx, "run.cancel", plugin.Scenario{Kind: plugin.ScenarioDelay, Delay: time.Minute})
	if !ok {
		return v
	}
	defer s.close()
	rctx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	w, err := s.c.RunWire(rctx, req)
	if err != nil {
		return fail("Run: %v", err)
	}
	// The delay scenario streams one event before it waits: once it has
	// arrived the plugin is inside the Run.
	first := make(chan error, 1)
	go func() {
		m, err := w.Recv()
		if err == nil && m.Terminal() {
			err = fmt.Errorf("the Run ended before any event: %+v", m)
		}
		first <- err
	}()
	select {
	case err := <-first:
		if err != nil {
			return fail("waiting for the delay scenario's first event: %v", err)
		}
	case <-time.After(10 * time.Second):
		return fail("the delay scenario streamed no event within 10 s")
	case <-ctx.Done():
		return fail("the delay scenario streamed no event before the case's time ran out")
	}
	cancelled := time.Now()
	cancelRun()
	ended := make(chan error, 1)
	go func() {
		for {
			if _, err := w.Recv(); err != nil {
				ended <- err
				return
			}
		}
	}()
	select {
	case <-ended:
	case <-time.After(settleLimit):
		return fail("the host's stream did not end within %s of the cancellation", settleLimit)
	}
	hostSide := time.Since(cancelled).Round(time.Millisecond)
	seen := fmt.Sprintf("host stream ended %s after the cancellation", hostSide)
	if k.service {
		sctx, cancel := context.WithTimeout(ctx, settleLimit+5*time.Second)
		defer cancel()
		st, err := s.c.Conformance().Settled(sctx, req.AttemptID, settleLimit-time.Since(cancelled))
		if err != nil {
			return fail("%s; Conformance.Settled: %v", seen, err)
		}
		after := time.Since(cancelled).Round(time.Millisecond)
		switch {
		case !st.Started:
			return fail("%s; the plugin reports no Run with attempt id %q", seen, req.AttemptID)
		case !st.Settled || after > settleLimit:
			return fail("%s; the plugin's Run handler had not returned %s after the cancellation (limit %s)", seen, after, settleLimit)
		case st.Failure == nil:
			return fail("%s; the plugin's Run settled with a result instead of an aborted failure", seen)
		case st.Failure.Kind != plugin.FailureAborted:
			return fail("%s; the plugin's Run settled as %s (%q), want aborted", seen, st.Failure.Kind, st.Failure.Message)
		}
		seen += fmt.Sprintf("; the plugin's Run settled as aborted within %s", after)
	} else {
		seen += "; the plugin's side is not observable without the Conformance service"
	}
	if err := s.serving(ctx); err != nil {
		return fail("%s; %v", seen, err)
	}
	return pass("%s; the plugin keeps serving", seen)
}

func caseFailures(ctx context.Context, k *kit) verdict {
	switch {
	case k.desc == nil:
		return skip("no Describe answer to read the failure kinds from (see describe)")
	case len(k.desc.FailureKinds) == 0:
		return skip("the plugin declares no failure kinds")
	}
	var asked, notAsked, problems []string
	var why string
	for _, kind := range k.desc.FailureKinds {
		sc := plugin.Scenario{Kind: plugin.ScenarioFailure, Failure: kind}
		if can, reason := k.canAsk(sc); !can {
			notAsked, why = append(notAsked, string(kind)), reason
			continue
		}
		asked = append(asked, string(kind))
	}
	if len(asked) == 0 {
		return skip("%s", why)
	}
	s, err := k.launchConfigured(ctx)
	if err != nil {
		return fail("%v", err)
	}
	defer s.close()
	for _, kind := range asked {
		sc := plugin.Scenario{Kind: plugin.ScenarioFailure, Failure: plugin.FailureKind(kind)}
		req := k.request("failures")
		if err := k.ask(ctx, s, &req, sc); err != nil {
			problems = append(problems, err.Error())
			continue
		}
		t := collect(ctx, s, req)
		f := t.failure()
		switch {
		case f == nil:
			problems = append(problems, fmt.Sprintf("%s: the Run ended with %s", kind, t.outcome()))
		case string(f.Kind) != kind:
			problems = append(problems, fmt.Sprintf("%s came back as %s (%q)", kind, f.Kind, cut(f.Message, 80)))
		}
	}
	seen := "typed as themselves: " + strings.Join(asked, ", ")
	if len(notAsked) > 0 {
		seen += fmt.Sprintf("; not asked (%s): %s", why, strings.Join(notAsked, ", "))
	}
	if len(problems) > 0 {
		return fail("%s", strings.Join(problems, "; "))
	}
	return pass("%s", seen)
}
