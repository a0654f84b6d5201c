package hcl

import (
	"fmt"
	"slices"
	"unicode"
	"unicode/utf8"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// loopSchema is the body of a loop block.
var loopSchema = &hclv2.BodySchema{
	Attributes: []hclv2.AttributeSchema{
		{Name: "kind"}, {Name: "depends_on"}, {Name: "max_rounds"}, {Name: "review"}, {Name: "until"},
	},
	Blocks: []hclv2.BlockHeaderSchema{{Type: "node", LabelNames: []string{"id"}}},
}

// loop decodes one loop block and appends it to nodes as a Node with Loop
// set (docs/run-file.md, "Loops").
func (d *decoder) loop(blk *hclv2.Block, nodes *[]Node) *nodeInfo {
	n := Node{ID: blk.Labels[0], Kind: KindRequired, Range: rangeOf(blk.DefRange), Loop: &Loop{Members: []Node{}}}
	d.checkName("loop", n.ID, blk.LabelRanges[0])
	content, diags := blk.Body.Content(loopSchema)
	d.diags = append(d.diags, diags...)
	attrs := content.Attributes
	info := &nodeInfo{blk: blk, attrs: attrs}
	if a := attrs["kind"]; a != nil {
		if s, ok := d.enum(a, KindRequired, KindOptional, KindFinalizer); ok {
			n.Kind = s
		}
	}
	if a := attrs["depends_on"]; a != nil {
		if deps, ranges, ok := d.strList(a, `a list of node ids, for example depends_on = ["plan"]`); ok {
			n.DependsOn, info.depRanges = deps, ranges
		}
	}
	if a := d.required(attrs, "max_rounds", blk, "max_rounds = 4: how many rounds may run before the loop fails LOOP_EXHAUSTED"); a != nil {
		// A loop that needs more than MaxRoundsLimit rounds rarely converges.
		if v, ok := d.intIn(a, 1, MaxRoundsLimit, "4"); ok {
			n.Loop.MaxRounds = v
		}
	}
	var names []string
	for _, mb := range content.Blocks {
		names = append(names, mb.Labels[0])
	}
	reviewA := d.required(attrs, "review", blk, `review = "<member>": the member whose verdict ends or repeats a round`)
	if reviewA != nil {
		if s, ok := d.nonEmptyStr(reviewA, `the id of a member, for example review = "check"`); ok {
			n.Loop.Review = s
			if len(names) > 0 && !slices.Contains(names, s) {
				d.errorAt(reviewA.Expr.Range(), fmt.Sprintf("Loop %q has no member %q to review", n.ID, s),
					fmt.Sprintf("review names the member whose verdict ends or repeats a round: one of the loop's node blocks.%s", didYouMean(s, names)))
			}
		}
	}
	outer := d.scope
	d.scope = tmplScope{loop: n.ID, members: names}
	for _, mb := range content.Blocks {
		m := d.node(mb, &n.Loop.Members)
		m.loop = info
		info.members = append(info.members, m)
		for _, attr := range []string{"kind", "for_each", "max_items"} {
			if a := m.attrs[attr]; a != nil {
				d.errorAt(a.NameRange, fmt.Sprintf("Loop member %q sets %s", mb.Labels[0], attr),
					fmt.Sprintf("A loop's members run once per round, each as a required node of its round: they have no kind, for_each or max_items. Remove %s; set kind on the loop %q itself.", attr, n.ID))
			}
		}
	}
	if a := attrs["until"]; a != nil {
		n.Loop.Until, info.untilRefs = d.until(a)
	}
	d.scope = outer
	if len(content.Blocks) == 0 {
		d.errorAt(blk.DefRange, fmt.Sprintf("Loop %q has no members", n.ID),
			"A loop runs its member nodes once per round. Add node blocks inside it, for example a writer and the reviewer its review attribute names.")
	}
	info.idx = len(*nodes)
	*nodes = append(*nodes, n)
	return info
}

// until decodes a loop's until condition to stored template source; a
// constant must be a bool.
func (d *decoder) until(a *hclv2.Attribute) (string, []resultRef) {
	expr := a.Expr.(hclsyntax.Expression)
	vars := expr.Variables()
	if len(vars) == 0 {
		v, ok := d.static(a)
		if !ok {
			return "", nil
		}
		b, err := convertBool(v)
		if err != nil {
			d.typeError(a, v.Type(), `a condition, for example until = "${length(input.results.author) > 0}"`)
			return "", nil
		}
		return fmt.Sprintf("${%v}", b), nil
	}
	refs, ok := d.templateRefs(vars, "until")
	if !ok || !d.checkTemplate(expr) {
		return "", refs
	}
	src, refs, _ := d.storedTemplate(expr, refs)
	return src, refs
}

// forEach decodes a node's for_each (and max_items): a constant list of
// strings or object is static; a template over input.results is dynamic,
// stored as template source. It returns the references of a dynamic
// source.
func (d *decoder) forEach(a, maxA *hclv2.Attribute) (*ForEach, []resultRef) {
	fe := &ForEach{MaxItems: DefaultMaxItems}
	if maxA != nil {
		if v, ok := d.intAttr(maxA, 1, "1000"); ok {
			fe.MaxItems = v
		}
	}
	expr := a.Expr.(hclsyntax.Expression)
	if vars := expr.Variables(); len(vars) > 0 {
		refs, ok := d.templateRefs(vars, "for_each")
		if !ok || !d.checkTemplate(expr) {
			return fe, refs
		}
		if len(refs) == 0 {
			d.errorAt(a.Expr.Range(), "for_each refers to no result",
				"A dynamic for_each renders an upstream node's result, for example for_each = \"${input.results.plan.files}\". Write a constant list or object otherwise.")
			return fe, nil
		}
		fe.Source, refs, _ = d.storedTemplate(expr, refs)
		return fe, refs
	}
	v, ok := d.static(a)
	if !ok {
		return fe, nil
	}
	items, err := forEachItems(v)
	if err != nil {
		d.errorAt(a.Expr.Range(), "Invalid for_each", fmt.Sprintf("%v. Write a list of strings, for example for_each = [\"a.go\", \"b.go\"], or an object, for example for_each = { a = \"…\" }.", upperFirst(err.Error())))
		return fe, nil
	}
	if len(items) > fe.MaxItems {
		rng := a.Expr.Range()
		d.errorAt(rng, fmt.Sprintf("for_each has %d items, more than max_items %d", len(items), fe.MaxItems),
			"Raise max_items on this node, or split the items.")
		return fe, nil
	}
	fe.Items = items
	if fe.Items == nil {
		fe.Items = []ForEachItem{}
	}
	return fe, nil
}

func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// staticLen is how many times a vertex is dispatched at least: a node
// once, a static for_each once per item, a dynamic one once, a loop once
// per member.
func staticLen(n *Node) int {
	switch {
	case n.Loop != nil:
		return len(n.Loop.Members)
	case n.ForEach != nil && n.ForEach.Source == "":
		return len(n.ForEach.Items)
	}
	return 1
}
