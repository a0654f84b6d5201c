package conformance

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/obversa/obversa/plugin"
)

// Robustness cases.

// largeRequestBytes is the size of the large request's prompt: 5 MiB.
const largeRequestBytes = 5 << 20

// largeRequestLimit bounds the large request: an answer or a refusal must
// come within it.
const largeRequestLimit = 30 * time.Second

// concurrentRuns is how many Runs robust.concurrency starts at once, unless
// the plugin declares a lower maximum.
const concurrentRuns = 8

// clearRefusals are the gRPC codes a plugin may refuse an oversize request
// with: they name the problem, unlike a broken connection.
var clearRefusals = []string{"ResourceExhausted", "InvalidArgument", "OutOfRange", "FailedPrecondition"}

func caseLargeRequest(ctx context.Context, k *kit) verdict {
	s, err := k.launchConfigured(ctx)
	if err != nil {
		return fail("%v", err)
	}
	defer s.close()
	req := k.request("robust.large_request")
	sentence := "This sentence pads a five mebibyte prompt. "
	req.Prompt = strings.Repeat(sentence, largeRequestBytes/len(sentence)+1)[:largeRequestBytes]
	// An answer may quote the prompt, which is itself larger than a
	// run's record keeps.
	recordCheckOf(ctx).quotesLargeRequests()
	lctx, cancel := context.WithTimeout(ctx, largeRequestLimit)
	defer cancel()
	t := collect(lctx, s, req)
	var seen string
	switch st := t.status(); {
	case t.terminal != nil:
		seen = "accepted: " + t.outcome()
	case st != nil && st.Failure != nil:
		seen = "refused with a typed failure: " + t.outcome()
	case st != nil && contains(clearRefusals, st.Code) && strings.TrimSpace(st.Message) != "":
		seen = fmt.Sprintf("refused: %s %q", st.Code, cut(st.Message, 160))
	case lctx.Err() != nil:
		return fail("no answer and no refusal within %s", largeRequestLimit)
	default:
		return fail("neither answered nor refused clearly: %s", t.outcome())
	}
	seen += fmt.Sprintf(" in %s", t.elapsed.Round(time.Millisecond))
	if err := s.serving(ctx); err != nil {
		return fail("%s; %v", seen, err)
	}
	return pass("%s; the plugin keeps serving", seen)
}

func casePanic(ctx context.Context, k *kit) verdict {
	s, req, v, ok := k.scenarioSession(ctx, "robust.panic", plugin.Scenario{Kind: plugin.ScenarioPanic})
	if !ok {
		return v
	}
	defer s.close()
	t := collect(ctx, s, req)
	f := t.failure()
	switch {
	case f == nil:
		return fail("the panicking Run ended with %s", t.outcome())
	case f.Kind != plugin.FailureUnknown:
		return fail("the panic came back as %s, want unknown", f.Kind)
	}
	seen := t.outcome()
	if err := s.serving(ctx); err != nil {
		return fail("%s; %v", seen, err)
	}
	next := collect(ctx, s, k.request("robust.panic"))
	if next.terminal == nil {
		return fail("%s; the next Run ended with %s", seen, next.outcome())
	}
	return pass("%s; Describe and the next Run still work", seen)
}

func caseConcurrency(ctx context.Context, k *kit) verdict {
	n := concurrentRuns
	if k.desc != nil && k.desc.Capabilities.MaxConcurrency > 0 && k.desc.Capabilities.MaxConcurrency < n {
		n = k.desc.Capabilities.MaxConcurrency
	}
	s, err := k.launchConfigured(ctx)
	if err != nil {
		return fail("%v", err)
	}
	defer s.close()
	// With a short delay scenario the Runs certainly overlap; a delay
	// asked for through requests has no duration, so only the service's
	// is used.
	delay := plugin.Scenario{Kind: plugin.ScenarioDelay, Delay: 300 * time.Millisecond}
	overlap := k.service && k.kinds[plugin.ScenarioDelay]
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	reqs := make([]plugin.RunRequest, n)
	for i := range reqs {
		reqs[i] = k.request("robust.concurrency")
		if overlap {
			if err := k.ask(cctx, s, &reqs[i], delay); err != nil {
				return fail("%v", err)
			}
		}
	}
	start := time.Now()
	var mu sync.Mutex
	var problems []string
	var wg sync.WaitGroup
	for i, req := range reqs {
		wg.Go(func() {
			t := collect(cctx, s, req)
			if t.result() == nil {
				mu.Lock()
				problems = append(problems, fmt.Sprintf("Run %d ended with %s", i+1, t.outcome()))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start).Round(time.Millisecond)
	how := "ordinary Runs"
	if overlap {
		how = "Runs with a 300 ms delay scenario"
	}
	if len(problems) > 0 {
		return fail("%d concurrent %s: %s", n, how, strings.Join(problems, "; "))
	}
	return pass("%d concurrent %s all ended with a result in %s", n, how, elapsed)
}
