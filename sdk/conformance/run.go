package conformance

import (
	"context"
	"strings"
	"testing"
)

// Run checks the plugin binary at binaryPath with Check and reports each
// case as a subtest of t named after it: a failed case fails its subtest
// with what was expected and what was seen, a skipped case skips it with
// the reason. It fails t at once (t.Fatal) when the check cannot start
// (ErrOptions, ErrBinary). The report is returned for further assertions
// and is logged as a table. The check is bounded by t's deadline when the
// test has one.
func Run(t *testing.T, binaryPath string, opts Options) *Report {
	t.Helper()
	ctx := t.Context()
	if dl, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl)
		defer cancel()
	}
	rep, err := Check(ctx, binaryPath, opts)
	if err != nil {
		t.Fatalf("conformance: %v", err)
	}
	var table strings.Builder
	_ = rep.WriteTable(&table)
	t.Logf("conformance report:\n%s", table.String())
	for _, res := range rep.Results {
		t.Run(res.Case, func(t *testing.T) {
			switch res.Status {
			case Fail:
				t.Errorf("expected: %s\nseen: %s", res.Expected, res.Seen)
			case Skip:
				t.Skip(res.Seen)
			}
		})
	}
	return rep
}
