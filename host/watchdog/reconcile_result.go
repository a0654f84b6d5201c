package watchdog

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/internal/shellquote"
)

// nullResultUsed refuses to record a null result for unit n, reconciled
// done with no --result, when a template reads that result in a way null
// cannot satisfy: the run would otherwise carry on only to fail that
// node INPUT_RENDER (docs/decisions.md, "A reconciled attempt's result is
// asked for when it is used"). An explicit `--result null` is the
// person's word and is not checked. g gives the instances' keys of a
// for_each node.
func nullResultUsed(def *graph.Definition, g *graph.State, n *graph.NodeState) error {
	var uses []string
	for _, r := range resultReaders(def, g, n) {
		breaks, err := hcl.ResultBreaks(r.read, nil, r.templates)
		if err != nil {
			continue
		}
		for _, b := range breaks {
			use := r.name + " " + b.Field
			if b.Field != "prompt" && b.Field != "for_each" && b.Field != "until" {
				use = r.name + " input field " + b.Field
			}
			if r.read.PreviousRound > 0 {
				use += fmt.Sprintf(" in round %d", r.read.PreviousRound)
			}
			var re *hcl.RenderError
			if errors.As(b.Err, &re) && re.Reference != "" {
				use += " (" + re.Reference + ")"
			}
			uses = append(uses, use)
		}
	}
	if len(uses) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s reads the result of %s, which --reconciled=done without --result records as null, and cannot render with null; "+
		"nothing was recorded: pass the result the attempt produced, --result '<json>' (for example --result '{\"text\": \"…\"}'), or --result null to record null all the same",
		ErrResultNeeded, strings.Join(uses, ", "), unitName(n))
}

// unitName names a unit for a person: a node, an instance of a for_each
// node, or a member of a loop in a round.
func unitName(n *graph.NodeState) string {
	switch {
	case n.Instance:
		return fmt.Sprintf("instance %q of node %q", n.Key, n.Def.ID)
	case n.Loop != "":
		return fmt.Sprintf("member %q of loop %q (round %d)", n.Def.ID, n.Loop, n.Round)
	}
	return fmt.Sprintf("node %q", n.Def.ID)
}

// resultReader is a set of templates that may read a unit's result, and
// where they find it.
type resultReader struct {
	name      string // `node "after"`, `loop "config"`
	read      hcl.ResultRead
	templates hcl.Templates
}

// resultReaders returns every template that may read n's result
// (docs/run-file.md, "Templates"): a node's result is input.results.<id>
// to every other vertex's prompt, input, for_each source and until; a
// for_each instance's is its key's field of input.results.<node>; a loop
// member's is input.results.<member> to the other members and the until
// of its round, loop.previous.<member> to the members and the until of
// the next round (when there can be one), and its id's field of
// input.results.<loop> outside the loop.
func resultReaders(def *graph.Definition, g *graph.State, n *graph.NodeState) []resultReader {
	id := n.Def.ID
	var out []resultReader
	// outside adds the templates of every vertex but the unit's own.
	outside := func(read hcl.ResultRead) {
		for i := range def.Nodes {
			d := &def.Nodes[i]
			if d.ID == n.Vertex {
				continue
			}
			out = append(out, vertexReaders(d, read)...)
		}
	}
	switch {
	case n.Instance:
		var keys []string
		if v := g.Vertex(n.Vertex); v != nil {
			for _, in := range v.Instances {
				keys = append(keys, in.Key)
			}
		}
		outside(hcl.ResultRead{Node: id, Vertex: n.Vertex, Key: n.Key, Keys: keys})
	case n.Loop != "":
		loop := loopDef(def, n.Loop)
		if loop == nil {
			return nil
		}
		members := make([]string, len(loop.Members))
		for i, m := range loop.Members {
			members[i] = m.ID
		}
		same := hcl.ResultRead{Node: id, Vertex: id}
		for i := range loop.Members {
			if m := &loop.Members[i]; m.ID != id {
				out = append(out, resultReader{fmt.Sprintf("node %q", m.ID), same, hcl.Templates{Prompt: m.Prompt, Input: m.Input}})
			}
		}
		if id != loop.Review {
			// The until is checked before the review, against the results
			// of the round's other members.
			out = append(out, resultReader{fmt.Sprintf("loop %q", n.Loop), same, hcl.Templates{Until: loop.Until}})
		}
		if n.Round < loop.MaxRounds {
			next := hcl.ResultRead{Node: id, Key: id, Keys: members, PreviousRound: n.Round + 1}
			for i := range loop.Members {
				m := &loop.Members[i]
				out = append(out, resultReader{fmt.Sprintf("node %q", m.ID), next, hcl.Templates{Prompt: m.Prompt, Input: m.Input}})
			}
			out = append(out, resultReader{fmt.Sprintf("loop %q", n.Loop), next, hcl.Templates{Until: loop.Until}})
		}
		outside(hcl.ResultRead{Node: id, Vertex: n.Loop, Key: id, Keys: members})
	default:
		outside(hcl.ResultRead{Node: id, Vertex: id})
	}
	return out
}

// vertexReaders returns the templates of vertex d that read through
// input.results: a node's prompt, input and for_each source, or a loop's
// until and its members' prompts and inputs.
func vertexReaders(d *graph.NodeDef, read hcl.ResultRead) []resultReader {
	if d.Loop == nil {
		t := hcl.Templates{Prompt: d.Prompt, Input: d.Input}
		if d.ForEach != nil {
			t.ForEach = d.ForEach.Source
		}
		return []resultReader{{fmt.Sprintf("node %q", d.ID), read, t}}
	}
	out := []resultReader{{fmt.Sprintf("loop %q", d.ID), read, hcl.Templates{Until: d.Loop.Until}}}
	for i := range d.Loop.Members {
		m := &d.Loop.Members[i]
		out = append(out, resultReader{fmt.Sprintf("node %q", m.ID), read, hcl.Templates{Prompt: m.Prompt, Input: m.Input}})
	}
	return out
}

// loopDef returns the definition of loop id, or nil.
func loopDef(def *graph.Definition, id string) *graph.LoopDef {
	for i := range def.Nodes {
		if def.Nodes[i].ID == id {
			return def.Nodes[i].Loop
		}
	}
	return nil
}

// verdictNeeded refuses --reconciled=done on a loop's review member n
// unless result is a verdict of the member's kind (docs/run-file.md,
// "Loops"): an engine reviewer's {status, summary, findings}, a binding
// reviewer's {exit_code, …}. The executor would read anything else as a
// failed review and start the next round; the operator's word must be a
// verdict instead. The error wraps ErrResultNeeded, names the position
// and the shape, and gives an example command for run.
func verdictNeeded(def *graph.Definition, n *graph.NodeState, result []byte, run string) error {
	if n.Loop == "" {
		return nil
	}
	loop := loopDef(def, n.Loop)
	if loop == nil || loop.Review != n.Def.ID {
		return nil
	}
	shape := `{"status": "pass"|"fail", "summary": "…", "findings": [{"reviewer": "…", "evidence": "…"}]} (summary and findings optional)`
	example := `{"status":"pass","summary":"…"}`
	parse := graph.ParseVerdict
	if n.Def.Binding != "" {
		shape = `an object with a whole-number exit_code, as the binding returns it ({"exit_code": 0, "stdout": "…", "stderr": "…"}; 0 passes)`
		example = `{"exit_code":0}`
		parse = func(r json.RawMessage) (graph.Verdict, error) { return graph.BindingVerdict(n.Def.ID, r) }
	}
	what := "--reconciled=done without --result records none"
	if len(result) > 0 {
		_, err := parse(result)
		if err == nil {
			return nil
		}
		what = fmt.Sprintf("--result is not one (%v)", err)
	}
	return fmt.Errorf("%w: %s, %s, is its loop's review: its result is the round's verdict, and %s; nothing was recorded: pass the verdict the attempt produced, %s, for example `obversa resume --position %s --reconciled=done --result %s %s`, or --reconciled=not-done to run the review again",
		ErrResultNeeded, n.Position, unitName(n), what, shape, shellquote.Quote(n.Position), shellquote.Quote(example), run)
}
