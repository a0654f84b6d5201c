package hcl

import (
	"fmt"
	"slices"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// resultRef is a reference to input.results.<node> in a template.
type resultRef struct {
	Node  string
	Text  string
	Range hclv2.Range
	// Deeper is set when the reference goes into the result
	// (input.results.<node>.<attr> or [index]); Attr is then that first
	// step's name ("" for a number index) and Deepest is set when the
	// reference goes further still.
	Deeper  bool
	Attr    string
	Deepest bool
}

// resultNode returns the node a traversal names when it has the shape
// input.results.<node>… (or the index forms of the last two steps).
func resultNode(t hclv2.Traversal) (string, bool) {
	if len(t) < 3 || t.RootName() != "input" {
		return "", false
	}
	if name, ok := stepName(t[1]); !ok || name != "results" {
		return "", false
	}
	return stepName(t[2])
}

// stepName returns the name an attribute step or string index step uses.
func stepName(s hclv2.Traverser) (string, bool) {
	switch s := s.(type) {
	case hclv2.TraverseAttr:
		return s.Name, true
	case hclv2.TraverseIndex:
		if s.Key.Type() == cty.String && s.Key.IsKnown() && !s.Key.IsNull() {
			return s.Key.AsString(), true
		}
	}
	return "", false
}

// tmplScope is what a template may refer to besides input.results: the
// loop's variables inside a loop's members and until, the item inside a
// for_each node.
type tmplScope struct {
	// loop is the id of the loop the template is in, "" outside loops;
	// members are its members' ids.
	loop    string
	members []string
	each    bool
}

// Template variables besides input (docs/run-file.md, "Templates").
var (
	loopAttrs = []string{"round", "findings", "previous"}
	eachAttrs = []string{"key", "value"}
)

// templateRefs checks every variable reference of a template expression
// (what: "prompt", "input", "for_each" or "until") against the decoder's
// scope and returns the references to results; ok is false when a
// reference of any other shape was diagnosed.
func (d *decoder) templateRefs(vars []hclv2.Traversal, what string) (refs []resultRef, ok bool) {
	ok = true
	for _, t := range vars {
		switch t.RootName() {
		case "loop":
			ok = d.loopRef(t, what) && ok
			continue
		case "each":
			ok = d.eachRef(t, what) && ok
			continue
		}
		node, isResult := resultNode(t)
		if !isResult {
			d.errorAt(t.SourceRange(), fmt.Sprintf("Invalid reference %s in %s", traversalString(t), what),
				fmt.Sprintf("A node's %s may only refer to the results of other nodes, as input.results.<node> followed by any attributes, for example ${input.results.draft} or ${input.results[\"my-node\"].stdout}; inside a loop also to loop.round, loop.findings and loop.previous.<member>, and in a for_each node to each.key and each.value.", what))
			ok = false
			continue
		}
		r := resultRef{Node: node, Text: traversalString(t), Range: t.SourceRange(), Deeper: len(t) > 3}
		if len(t) > 3 {
			r.Attr, _ = stepName(t[3])
			r.Deepest = len(t) > 4
		}
		refs = append(refs, r)
	}
	return refs, ok
}

// loopRef checks a reference to loop.*: only inside a loop, only to its
// attributes, and loop.previous only to its members.
func (d *decoder) loopRef(t hclv2.Traversal, what string) bool {
	text := traversalString(t)
	if d.scope.loop == "" {
		d.errorAt(t.SourceRange(), fmt.Sprintf("Reference to %s outside a loop", text),
			fmt.Sprintf("loop.round, loop.findings and loop.previous.<member> exist only in the prompt, input and until of a loop's members. Move this node into a loop \"<name>\" { … } block, or remove %s from its %s.", text, what))
		return false
	}
	if len(t) < 2 {
		d.errorAt(t.SourceRange(), "Incomplete reference to loop",
			"Refer to one of the loop's variables: loop.round (1-based), loop.findings (the last failed review's findings as text) or loop.previous.<member> (that member's result in the previous round).")
		return false
	}
	attr, _ := stepName(t[1])
	if !slices.Contains(loopAttrs, attr) {
		d.errorAt(t.SourceRange(), fmt.Sprintf("Unknown loop variable %q", attr),
			fmt.Sprintf("A loop's members may use loop.round, loop.findings and loop.previous.<member>.%s", didYouMean(attr, loopAttrs)))
		return false
	}
	if attr == "previous" && len(t) > 2 {
		m, _ := stepName(t[2])
		if !slices.Contains(d.scope.members, m) {
			d.errorAt(t.SourceRange(), fmt.Sprintf("Loop %q has no member %q", d.scope.loop, m),
				fmt.Sprintf("loop.previous.<member> is a member's result in the previous round (null in round 1).%s", didYouMean(m, d.scope.members)))
			return false
		}
	}
	return true
}

// eachRef checks a reference to each.*: only in a for_each node, only to
// each.key and each.value.
func (d *decoder) eachRef(t hclv2.Traversal, what string) bool {
	text := traversalString(t)
	if !d.scope.each {
		d.errorAt(t.SourceRange(), fmt.Sprintf("Reference to %s outside for_each", text),
			fmt.Sprintf("each.key and each.value exist only in the prompt and input of a node with for_each (not in the for_each itself). Add for_each to this node, or remove %s from its %s.", text, what))
		return false
	}
	attr := ""
	if len(t) > 1 {
		attr, _ = stepName(t[1])
	}
	if !slices.Contains(eachAttrs, attr) {
		d.errorAt(t.SourceRange(), fmt.Sprintf("Unknown for_each variable %s", text),
			fmt.Sprintf("A for_each node's instances may use each.key (the item's key) and each.value (its value).%s", didYouMean(attr, eachAttrs)))
		return false
	}
	return true
}
