package watchdog

import (
	"errors"
	"testing"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
)

// TestRequestQueue: requests are claimed oldest first, once; an answer
// is read once; a request is either withdrawn or claimed, never both; a
// claimed request a worker did not answer is offered to the next.
func TestRequestQueue(t *testing.T) {
	q := newRequestQueue(t.TempDir())
	first, err := q.put("dag/a/1", graph.DecisionAllow)
	if err != nil {
		t.Fatal(err)
	}
	second, err := q.put("dag/b/1", graph.DecisionDeny)
	if err != nil {
		t.Fatal(err)
	}
	third, err := q.put("dag/c/1", graph.DecisionAllow)
	if err != nil {
		t.Fatal(err)
	}
	if !q.withdraw(third) || q.withdraw(third) {
		t.Fatal("an unclaimed request is withdrawn exactly once")
	}
	reqs, err := q.Pending()
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 2 || reqs[0].ID != first || reqs[1].ID != second || reqs[1].Decision != graph.DecisionDeny {
		t.Fatalf("pending %+v", reqs)
	}
	if q.withdraw(first) {
		t.Fatal("a claimed request was withdrawn")
	}
	q.Answer(first, nil)
	q.Answer(second, runstate.ErrAlreadyDecided)
	if a, ok := q.answer(first); !ok || a.err() != nil {
		t.Fatalf("answer of %s: %+v %v", first, a, ok)
	}
	if _, ok := q.answer(first); ok {
		t.Fatal("an answer was read twice")
	}
	if a, ok := q.answer(second); !ok || !errors.Is(a.err(), runstate.ErrAlreadyDecided) {
		t.Fatalf("refusal of %s: %+v", second, a)
	}
	// A claim whose worker died before answering is offered again.
	fourth, _ := q.put("dag/d/1", graph.DecisionAllow)
	if reqs, _ := q.Pending(); len(reqs) != 1 || reqs[0].ID != fourth {
		t.Fatalf("pending %+v", reqs)
	}
	if reqs, _ := q.Pending(); len(reqs) != 1 || reqs[0].ID != fourth {
		t.Fatalf("an unanswered claim is not offered again: %+v", reqs)
	}
	q.drop(fourth)
	if reqs, _ := q.Pending(); len(reqs) != 0 {
		t.Fatalf("pending after drop %+v", reqs)
	}
}
