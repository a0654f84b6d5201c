package ui

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/obversa/obversa/host/runview"
)

// viewOf makes a RunView of fuzz data: its bytes choose the nodes (how
// many, their ids and statuses), the graph's lines and the rows its
// nodes are tied to (graph_nodes), the phase and the flags, so that two of them differ in every way a run's views differ.
func viewOf(data []byte) RunView {
	at := func(i int) byte {
		if len(data) == 0 {
			return 0
		}
		return data[i%len(data)]
	}
	statuses := []string{"idle", "dispatched", "started", "paused", "passed", "failed", "blocked", "skipped"}
	v := RunView{Run: runview.Summary{RunID: "r1", Dir: "/s/default/runs/r1", Graph: "dag", Phase: runview.Phases[int(at(0))%len(runview.Phases)],
		ElapsedMS: int64(at(1)) * 1000}, Live: at(2)&1 == 1, CanResume: at(2)&2 == 2, ReadOnly: at(2)&4 == 4}
	n := len(data) % 12
	var lines []string
	lines = append(lines, "flowchart TD")
	for i := range n {
		id := fmt.Sprintf("n%c%d", 'a'+at(3+i)%4, i)
		st := statuses[int(at(4+i))%len(statuses)]
		v.Nodes = append(v.Nodes, NodeView{Node: runview.Node{ID: id, Kind: "required", Status: st, Attempts: int(at(5+i)) % 3,
			ElapsedMS: int64(at(6 + i))}, Commands: []Command{{"show", "obversa show r1 " + id}}})
		lines = append(lines, "  n"+fmt.Sprint(i)+`["`+id+" · "+st+`"]`)
		// A graph node is tied to its row by id, or to none yet (a loop's
		// member before its loop starts), or to another round's row.
		switch at(9+i) % 3 {
		case 0:
			v.GraphNodes = append(v.GraphNodes, id)
		case 1:
			v.GraphNodes = append(v.GraphNodes, "")
		default:
			v.GraphNodes = append(v.GraphNodes, "loop/"+fmt.Sprint(at(10+i)%3)+"/"+id)
		}
		if st == "paused" {
			v.Waiting = append(v.Waiting, Waiting{Node: id, Position: "dag/" + id + "/1"})
		}
	}
	if at(7)&1 == 1 {
		lines = append(lines, "  classDef passed fill:#d3f9d8")
	}
	v.Graph = strings.Join(lines, "\n") + "\n"
	v.Commands = []Command{{"show", "obversa show r1"}}
	if v.Live {
		v.Commands = append(v.Commands, Command{"stop", "obversa stop r1"})
	}
	if at(8)&1 == 1 {
		v.Result = nil
	}
	return v
}

// FuzzLiveViewChange: for any two views, the change the server sends
// from one to the other, applied by the page's decoder to the snapshot
// of the first, gives the snapshot of the second; a change is never
// sent when nothing a page shows changed.
func FuzzLiveViewChange(f *testing.F) {
	f.Add([]byte{}, []byte{1})
	f.Add([]byte{1, 2, 3, 4, 5, 6}, []byte{1, 2, 3, 4, 5, 7})
	f.Add([]byte("abcdefghij"), []byte("abc"))
	f.Add([]byte("abc"), []byte("abcdefghijk"))
	f.Add([]byte("same view"), []byte("same view"))
	js := newJSApplier(f)
	f.Fuzz(func(t *testing.T, a, b []byte) {
		l := newLiveView(viewOf(a), nil)
		before := l.snapshot()
		c := l.update(viewOf(b))
		after := l.snapshot()
		if c == nil {
			sameJSON(t, "no change", before, after)
			return
		}
		got, err := js.apply(before, c)
		if err != nil || string(got) == "null" {
			t.Fatalf("the page cannot apply %s to %s: %v", c, before, err)
		}
		sameJSON(t, "the view after a change", got, after)
		// The page refuses the change again: it applies to version 1 only.
		if again, err := js.apply(got, c); err != nil || string(again) != "null" {
			t.Fatalf("the change applied twice: %s (%v)", again, err)
		}
	})
}

// FuzzApplyChange: the page's decoder takes any "change" message
// without throwing, and what it accepts is a view: nodes a list, the
// graph text, at the next version.
func FuzzApplyChange(f *testing.F) {
	l := newLiveView(viewOf([]byte("abcdef")), nil)
	view := l.snapshot()
	f.Add(l.update(viewOf([]byte("abcdefgh"))))
	f.Add([]byte(`{"epoch":"` + l.epoch + `","base":1,"v":2,"set":{"__proto__":{"x":1}}}`))
	f.Add([]byte(`{"epoch":"` + l.epoch + `","base":1,"v":2,"nodes":{"len":3,"set":{"2":1}}}`))
	f.Add([]byte(`{"epoch":"` + l.epoch + `","base":1,"v":2,"graph":{"len":1,"set":{"0":7}}}`))
	f.Add([]byte(`{"epoch":"` + l.epoch + `","base":1,"v":2,"nodes":{"len":1e300}}`))
	f.Add([]byte(`null`))
	js := newJSApplier(f)
	f.Fuzz(func(t *testing.T, change []byte) {
		if !json.Valid(change) {
			return // the page gets JSON.parse's error, not the decoder's
		}
		got, err := js.apply(view, change)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) == "null" {
			return
		}
		var v struct {
			V     int64
			Nodes []json.RawMessage
			Graph string
		}
		if err := json.Unmarshal(got, &v); err != nil || v.V != 2 {
			t.Fatalf("accepted %s and made %s (%v)", change, got, err)
		}
	})
}
