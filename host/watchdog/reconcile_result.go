package watchdog

import (
	"errors"
	"fmt"
	"strings"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/host/graph"
)

// nullResultUsed refuses to record a null result for node n, reconciled
// done with no --result, when a template of another node reads that
// result in a way null cannot satisfy: the run would otherwise carry on
// only to fail that node INPUT_RENDER (docs/decisions.md, "A reconciled
// attempt's result is asked for when it is used"). An explicit
// `--result null` is the person's word and is not checked.
func nullResultUsed(def *graph.Definition, n *graph.NodeState) error {
	if n.Def.ForEach != nil {
		// Downstream templates see an object of the instances' results,
		// not this one alone; what null does there is not checked.
		return nil
	}
	var uses []string
	check := func(d *graph.NodeDef) {
		if d.ID == n.Def.ID {
			return
		}
		breaks, err := hcl.ResultBreaks(n.Def.ID, nil, d.Prompt, d.Input)
		if err != nil {
			return
		}
		for _, b := range breaks {
			use := fmt.Sprintf("node %q %s", d.ID, b.Field)
			if b.Field != "prompt" {
				use = fmt.Sprintf("node %q input field %s", d.ID, b.Field)
			}
			var re *hcl.RenderError
			if errors.As(b.Err, &re) && re.Reference != "" {
				use += " (" + re.Reference + ")"
			}
			uses = append(uses, use)
		}
	}
	for i := range def.Nodes {
		check(&def.Nodes[i])
		if l := def.Nodes[i].Loop; l != nil {
			for j := range l.Members {
				check(&l.Members[j])
			}
		}
	}
	if len(uses) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s reads the result of node %q, which --reconciled=done without --result records as null, and cannot render with null; "+
		"nothing was recorded: pass the result the attempt produced, --result '<json>' (for example --result '{\"text\": \"…\"}'), or --result null to record null all the same",
		ErrResultNeeded, strings.Join(uses, ", "), n.Def.ID)
}
