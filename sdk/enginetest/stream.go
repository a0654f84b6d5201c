package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/obversa/obversa/plugin"
)

// answerPart is a's final part and its text: a's JSON as a structured
// part, else a's text or "mock answer to: <prompt>" as a text part.
func answerPart(a answer, prompt string) (plugin.Part, string) {
	if a.json != nil {
		return plugin.Part{Kind: plugin.PartStructured, JSON: append(json.RawMessage(nil), a.json...), Final: true}, string(a.json)
	}
	outText := fmt.Sprintf("mock answer to: %q", prompt)
	if a.text != nil {
		outText = *a.text
	}
	return plugin.Part{Kind: plugin.PartText, Text: outText, Final: true}, outText
}

// streamAnswer emits a text final's deltas (up to three, or one per line when
// a sets a stream interval, waiting it between them) and then, when usage
// is known, a usage event.
func streamAnswer(ctx context.Context, emit plugin.Emitter, a answer, final plugin.Part, outText string, usage plugin.Usage) error {
	if final.Kind == plugin.PartText {
		deltas := splitText(outText, 3)
		if a.interval > 0 && strings.Contains(strings.TrimSuffix(outText, "\n"), "\n") {
			deltas = strings.SplitAfter(outText, "\n")
		}
		for i, delta := range deltas {
			if i > 0 && a.interval > 0 {
				if err := wait(ctx, a.interval); err != nil {
					return err
				}
			}
			if err := send(ctx, emit, plugin.RunEvent{Kind: plugin.EventText, Text: delta}); err != nil {
				return err
			}
		}
	}
	if usage.Known {
		if err := send(ctx, emit, plugin.RunEvent{Kind: plugin.EventUsage, Usage: usage}); err != nil {
			return err
		}
	}
	return nil
}

// send emits ev unless ctx is over; an emitter error ends the call.
func send(ctx context.Context, emit plugin.Emitter, ev plugin.RunEvent) error {
	if err := ctxFailure(ctx); err != nil {
		return err
	}
	if emit == nil {
		return nil
	}
	if err := emit(ev); err != nil {
		return &plugin.Failure{Kind: plugin.FailureAborted, Message: "event stream closed: " + err.Error()}
	}
	return nil
}

// ctxFailure maps an ended context to its typed failure: timeout for an
// expired deadline, aborted for a cancellation; nil while ctx is live.
func ctxFailure(ctx context.Context) error {
	switch err := ctx.Err(); {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return &plugin.Failure{Kind: plugin.FailureTimeout, Message: "mock engine: deadline exceeded"}
	default:
		return &plugin.Failure{Kind: plugin.FailureAborted, Message: "mock engine: call cancelled"}
	}
}

// derivedUsage counts a quarter of the characters of prompt and answer,
// rounded up, at least 1 each.
func derivedUsage(prompt, answer string) plugin.Usage {
	tokens := func(s string) int64 { return max(1, int64(utf8.RuneCountInString(s)+3)/4) }
	return plugin.Usage{Known: true, Input: tokens(prompt), Output: tokens(answer)}
}

// wait waits d, or fails as ctx ends (ctxFailure).
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctxFailure(ctx)
	case <-t.C:
		return nil
	}
}

// splitText cuts s into at most n non-empty pieces on rune boundaries whose
// concatenation is s.
func splitText(s string, n int) []string {
	if s == "" {
		return nil
	}
	var out []string
	size := max(1, (len(s)+n-1)/n)
	for len(s) > 0 {
		cut := min(size, len(s))
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}
