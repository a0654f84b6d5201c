package conformance

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/obversa/obversa/internal/canonjson"
	"github.com/obversa/obversa/plugin"
)

// The check "record": every result a case receives must be one a run can
// record. A run keeps an engine's result in its record as canonical JSON
// (docs/decisions.md, "A value the record cannot hold exactly fails its
// node"); a result the record cannot store fails its node in every run
// (INVALID_EVENT, RESULT_TOO_LARGE), however well the plugin follows the
// protocol otherwise.

// defaultMaxArtifactBytes is the largest result a run keeps by default,
// in bytes (storage.max_artifact_bytes, defaultMaxArtifactBytes; a
// test holds the two equal): the kit imports neither the run-file decoder
// nor the host (docs/architecture.md#packages-and-imports).
const defaultMaxArtifactBytes = 1 << 20

// recordCheckName names the check in the report.
const recordCheckName = "record"

// recordCheck collects what the record could not store of the results one
// case received.
type recordCheck struct {
	mu       sync.Mutex
	problems []string
	// anySize leaves the results' size unjudged: the case's requests are
	// larger than the record keeps, and an answer may quote them.
	anySize bool
}

type recordKey struct{}

// withRecordCheck returns ctx carrying a fresh recordCheck for one case.
func withRecordCheck(ctx context.Context) (context.Context, *recordCheck) {
	rc := &recordCheck{}
	return context.WithValue(ctx, recordKey{}, rc), rc
}

// recordCheckOf returns the case's recordCheck, nil outside a case.
func recordCheckOf(ctx context.Context) *recordCheck {
	rc, _ := ctx.Value(recordKey{}).(*recordCheck)
	return rc
}

// quotesLargeRequests leaves the size of the case's results unjudged: it
// sends a request larger than the record keeps (robust.large_request),
// which an answer may quote. A nil rc does nothing.
func (rc *recordCheck) quotesLargeRequests() {
	if rc == nil {
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.anySize = true
}

// note checks r, the result of the Run named where ("" for a case's only
// one), and keeps what the record cannot store of it. A nil rc or r does
// nothing.
func (rc *recordCheck) note(where string, r *plugin.RunResult) {
	if rc == nil || r == nil {
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	ps := unstorable(r, rc.anySize)
	if len(ps) == 0 {
		return
	}
	msg := strings.Join(ps, "; ")
	if where != "" {
		msg = where + ": " + msg
	}
	for _, p := range rc.problems {
		if p == msg {
			return
		}
	}
	rc.problems = append(rc.problems, msg)
}

// judge turns v into a failure when the case's results could not be
// recorded, naming the check and what the record refuses.
func (rc *recordCheck) judge(v verdict) verdict {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.problems) == 0 || v.status == Skip {
		return v
	}
	return fail("%s; check %s failed: a run cannot record the result: %s", v.seen, recordCheckName, strings.Join(rc.problems, "; "))
}

// unstorable lists what a run's record cannot store of r: a usage count
// outside 0…2^53−1 (plugin.MaxUsageCount, the largest integer the record's
// JSON holds exactly), a part's JSON that has no exact canonical form (a
// number no double holds exactly, invalid UTF-8, a lone surrogate, a
// member name twice: canonjson.Data, the rule the file record
// appends by), and, unless anySize, parts larger
// in all than the record keeps by default (max_artifact_bytes).
func unstorable(r *plugin.RunResult, anySize bool) []string {
	var out []string
	if err := r.Usage.Validate(); err != nil {
		out = append(out, fmt.Sprintf("usage: %v", err))
	}
	size := 0
	for i, p := range r.Parts {
		size += len(p.Text) + len(p.JSON) + len(p.ToolName) + len(p.ToolID)
		if len(p.JSON) == 0 {
			continue
		}
		if _, err := canonjson.Data(p.JSON, false); err != nil {
			out = append(out, fmt.Sprintf("part %d (%s): data has no exact RFC 8785 canonical form: %v", i+1, p.Kind, err))
		}
	}
	if !anySize && size > defaultMaxArtifactBytes {
		out = append(out, fmt.Sprintf("its parts hold %d bytes, more than the %d a run keeps by default (storage.max_artifact_bytes; the node would fail RESULT_TOO_LARGE)",
			size, defaultMaxArtifactBytes))
	}
	return out
}
