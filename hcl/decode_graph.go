package hcl

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"unicode/utf8"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// graphSchema is the body of the graph block.
var graphSchema = &hclv2.BodySchema{
	Attributes: []hclv2.AttributeSchema{
		{Name: "global_concurrency"},
		{Name: "keyed_concurrency"},
		{Name: "stop_on_error"},
		{Name: "retry_cap_per_node"},
		{Name: "approval"},
		{Name: "policy"},
		{Name: "policy_timeout"},
	},
	Blocks: []hclv2.BlockHeaderSchema{{Type: "node", LabelNames: []string{"id"}}, {Type: "loop", LabelNames: []string{"id"}}},
}

// nodeAttrNames are the attributes of a node block.
var nodeAttrNames = []string{"kind", "lane", "binding", "prompt", "prompt_file", "input",
	"depends_on", "retry_safe", "timeout", "key", "approval", "for_each", "max_items"}

// nodeInfo is a decoded vertex (node or loop) or loop member with the
// source ranges validation needs.
type nodeInfo struct {
	idx int // index in Graph.Nodes, or in its loop's Members
	// n is the decoded node, set once every block is decoded (the slices
	// no longer move).
	n         *Node
	blk       *hclv2.Block
	attrs     hclv2.Attributes
	depRanges []hclv2.Range
	refs      []resultRef
	// loop is the loop a member belongs to; members are a loop's.
	loop    *nodeInfo
	members []*nodeInfo
	// untilRefs are a loop's until condition's references to results.
	untilRefs []resultRef
}

// graph decodes the graph block and validates the graph as a whole.
func (d *decoder) graph(blk *hclv2.Block, rf *RunFile) Graph {
	g := Graph{
		Name:              blk.Labels[0],
		GlobalConcurrency: DefaultGlobalConcurrency,
		RetryCapPerNode:   DefaultRetryCapPerNode,
		PolicyTimeout:     DefaultPolicyTimeout,
		Nodes:             []Node{},
	}
	if g.Name != GraphForm {
		d.errorAt(blk.LabelRanges[0], fmt.Sprintf("Unsupported graph form %q", g.Name),
			fmt.Sprintf("The only graph form is %q: write graph %q { … }.", GraphForm, GraphForm))
	}
	content, diags := blk.Body.Content(graphSchema)
	d.diags = append(d.diags, diags...)
	attrs := content.Attributes

	if a := attrs["global_concurrency"]; a != nil {
		if v, ok := d.intAttr(a, 1, "4"); ok {
			g.GlobalConcurrency = v
		}
	}
	keyRanges := map[string]hclv2.Range{}
	if a := attrs["keyed_concurrency"]; a != nil {
		g.KeyedConcurrency = d.keyedConcurrency(a, keyRanges)
	}
	if a := attrs["stop_on_error"]; a != nil {
		if v, ok := d.boolean(a); ok {
			g.StopOnError = v
		}
	}
	if a := attrs["retry_cap_per_node"]; a != nil {
		// 0 is valid: no retries.
		if v, ok := d.intAttr(a, 0, "1"); ok {
			g.RetryCapPerNode = v
		}
	}

	var infos []*nodeInfo
	for _, nb := range content.Blocks {
		if nb.Type == "loop" {
			infos = append(infos, d.loop(nb, &g.Nodes))
		} else {
			infos = append(infos, d.node(nb, &g.Nodes))
		}
	}
	if len(content.Blocks) == 0 {
		d.errorAt(blk.DefRange, "Empty graph",
			"The graph has no nodes. Add at least one node block, for example node \"draft\" { lane = \"writer\" prompt = \"…\" }.")
		return g
	}
	var all []*nodeInfo // vertices and members
	for _, info := range infos {
		info.n = &g.Nodes[info.idx]
		all = append(all, info)
		for _, m := range info.members {
			m.n = &info.n.Loop.Members[m.idx]
			all = append(all, m)
		}
	}
	byID := d.uniqueIDs(all)

	d.checkBindings(all, rf)
	edgesOK := d.checkEdges(infos, byID)
	for _, info := range infos {
		if info.n.Loop != nil {
			edgesOK = d.checkMemberEdges(info, byID) && edgesOK
		}
	}
	if edgesOK {
		edgesOK = d.checkCycles(infos, byID)
		for _, info := range infos {
			if info.n.Loop != nil {
				edgesOK = d.checkCycles(info.members, byID) && edgesOK
			}
		}
	}
	d.checkKeys(all, keyRanges, g.KeyedConcurrency)
	if a := attrs["approval"]; a != nil {
		d.approval(a, &g, all, byID)
	}
	d.policy(attrs, &g, rf)
	d.checkRefs(infos, byID, edgesOK)
	return g
}

// keyedConcurrency decodes `keyed_concurrency = { key = limit, … }` in
// declaration order.
func (d *decoder) keyedConcurrency(a *hclv2.Attribute, keyRanges map[string]hclv2.Range) []KeyLimit {
	if len(a.Expr.Variables()) > 0 {
		d.static(a) // diagnoses the reference
		return nil
	}
	items, ok := d.objectItems(a.Expr, "keyed_concurrency")
	if !ok {
		d.errorAt(a.Expr.Range(), "Invalid keyed_concurrency",
			"keyed_concurrency must be an object of key names to limits, written as { repo = 1, api = 2 }; the order written is the order limits apply.")
		return nil
	}
	var out []KeyLimit
	for _, it := range items {
		if !d.checkName("concurrency key", it.Key, it.KeyRange) {
			continue
		}
		ka := &hclv2.Attribute{Name: fmt.Sprintf("keyed_concurrency.%s", it.Key), Expr: it.Value, Range: hclv2.RangeBetween(it.KeyRange, it.Value.Range())}
		limit, ok := d.intAttr(ka, 1, "1")
		if !ok {
			continue
		}
		keyRanges[it.Key] = it.KeyRange
		out = append(out, KeyLimit{Key: it.Key, Limit: limit})
	}
	return out
}

// node decodes one node block (of the graph, or of a loop when d.scope
// names one) and appends it to nodes.
func (d *decoder) node(blk *hclv2.Block, nodes *[]Node) *nodeInfo {
	n := Node{ID: blk.Labels[0], Kind: KindRequired, Range: rangeOf(blk.DefRange)}
	d.checkName("node", n.ID, blk.LabelRanges[0])
	attrs := d.attrs(blk.Body.(*hclsyntax.Body), nodeAttrNames...)
	info := &nodeInfo{blk: blk, attrs: attrs}

	if a := attrs["kind"]; a != nil {
		if s, ok := d.enum(a, KindRequired, KindOptional, KindFinalizer); ok {
			n.Kind = s
		}
	}
	// for_each comes first: it decides whether each.* may be used below.
	outer := d.scope
	if a := attrs["for_each"]; a != nil {
		n.ForEach, info.refs = d.forEach(a, attrs["max_items"])
		d.scope.each = true
	} else if a := attrs["max_items"]; a != nil {
		d.errorAt(a.NameRange, fmt.Sprintf("Node %q sets max_items without for_each", n.ID),
			"max_items bounds the instances of a node with for_each. Remove it, or add for_each = [ … ] or for_each = \"${input.results.<node>.<list>}\".")
	}
	defer func() { d.scope = outer }()
	laneA, bindingA := attrs["lane"], attrs["binding"]
	if laneA != nil {
		n.Lane, _ = d.nonEmptyStr(laneA, `the name of a lane, for example lane = "writer"`)
	}
	if bindingA != nil {
		n.Binding, _ = d.nonEmptyStr(bindingA, `the name of a node plugin, for example binding = "shell"`)
	}
	switch {
	case laneA != nil && bindingA != nil:
		d.errorAt(bindingA.NameRange, fmt.Sprintf("Node %q sets both lane and binding", n.ID),
			"A node is either an engine call (lane = \"<lane>\", with a prompt) or a data step (binding = \"<node plugin>\", with an input). Remove one of lane and binding.")
	case laneA == nil && bindingA == nil:
		d.errorAt(blk.DefRange, fmt.Sprintf("Node %q has neither lane nor binding", n.ID),
			"Add lane = \"<lane>\" and a prompt to call an engine, or binding = \"<node plugin>\" and an input to run a data step.")
	}
	d.nodeBody(&n, info, laneA, bindingA)
	info.idx = len(*nodes)
	*nodes = append(*nodes, n)
	return info
}

// nodeBody decodes a node's prompt or input and its other attributes.
func (d *decoder) nodeBody(n *Node, info *nodeInfo, laneA, bindingA *hclv2.Attribute) {
	attrs, blk := info.attrs, info.blk
	promptA, promptFileA := attrs["prompt"], attrs["prompt_file"]
	if promptA != nil && promptFileA != nil {
		d.errorAt(promptFileA.NameRange, fmt.Sprintf("Node %q sets both prompt and prompt_file", n.ID),
			"Write the prompt inline with prompt = \"…\" or keep it in a file with prompt_file = \"…\", not both.")
	}
	hasPrompt := false
	before := len(d.diags)
	if promptA != nil {
		src, refs, set := d.prompt(promptA)
		n.Prompt, hasPrompt = src, set
		info.refs = append(info.refs, refs...)
	}
	if promptFileA != nil && promptA == nil {
		path, src, refs, set := d.promptFile(promptFileA)
		if set {
			n.PromptFile, n.Prompt, hasPrompt = path, src, true
		}
		info.refs = append(info.refs, refs...)
	}
	promptFailed := len(d.diags) > before
	if a := attrs["input"]; a != nil {
		in, refs, _ := d.input(a)
		n.Input = in
		info.refs = append(info.refs, refs...)
	}
	switch {
	case laneA != nil && bindingA == nil && !hasPrompt && !promptFailed:
		d.errorAt(blk.DefRange, fmt.Sprintf("Node %q has no prompt", n.ID),
			"A node with a lane sends a prompt to an engine. Add prompt = \"…\" or prompt_file = \"prompts/<file>\".")
	case bindingA != nil && laneA == nil && (hasPrompt || promptFailed):
		a := promptA
		if a == nil {
			a = promptFileA
		}
		d.errorAt(a.NameRange, fmt.Sprintf("Node %q has a binding and a prompt", n.ID),
			"A prompt is sent to an engine, but this node runs the binding "+fmt.Sprintf("%q", n.Binding)+", which receives input. Put what the binding needs in input = { … }, or use lane = \"<lane>\" to call an engine.")
	case laneA != nil && bindingA == nil && attrs["input"] != nil:
		d.errorAt(attrs["input"].NameRange, fmt.Sprintf("Node %q has a lane and an input", n.ID),
			"An engine call is driven by its prompt; input is for binding nodes. Move what the engine needs into the prompt (templates can refer to ${input.results.<node>}), or use binding = \"<node plugin>\".")
	}

	if a := attrs["depends_on"]; a != nil {
		deps, ranges, ok := d.strList(a, `a list of node ids, for example depends_on = ["draft"]`)
		if ok {
			n.DependsOn, info.depRanges = deps, ranges
		}
	}
	if a := attrs["retry_safe"]; a != nil {
		n.RetrySafe, _ = d.boolean(a)
	}
	if a := attrs["timeout"]; a != nil {
		n.Timeout, _ = d.duration(a, positiveDuration, "10m")
	}
	if a := attrs["key"]; a != nil {
		n.Key, _ = d.nonEmptyStr(a, `a key of keyed_concurrency, for example key = "repo"`)
	}
	if a := attrs["approval"]; a != nil {
		n.Approval, _ = d.boolean(a)
	}
}

// prompt decodes a prompt attribute. set is false when the prompt is
// absent (null) or invalid.
func (d *decoder) prompt(a *hclv2.Attribute) (src string, refs []resultRef, set bool) {
	expr := a.Expr.(hclsyntax.Expression)
	vars := expr.Variables()
	if len(vars) == 0 {
		s, ok := d.str(a, `a string or template, for example prompt = "Summarise ${input.results.draft}"`)
		return escapeLiteral(s), nil, ok
	}
	refs, ok := d.templateRefs(vars, "prompt")
	if !ok || !d.checkTemplate(expr) {
		return "", refs, false
	}
	return d.storedTemplate(expr, refs)
}

// storedTemplate converts a template expression to its stored source.
func (d *decoder) storedTemplate(expr hclsyntax.Expression, refs []resultRef) (string, []resultRef, bool) {
	src, err := d.templateSource(expr)
	if err != nil {
		d.errorAt(expr.Range(), "Cannot store this template",
			fmt.Sprintf("The template could not be converted for rendering at dispatch time (%v). Rewrite it as a plain quoted string or heredoc and report this as a bug.", err))
		return "", refs, false
	}
	if !d.checkStoredTemplate(src, expr.Range()) {
		return "", refs, false
	}
	return src, refs, true
}

// promptFile reads a prompt_file: its content is template source as is.
func (d *decoder) promptFile(a *hclv2.Attribute) (path, src string, refs []resultRef, set bool) {
	p, ok := d.nonEmptyStr(a, `a path relative to the run file, for example prompt_file = "prompts/draft.md"`)
	if !ok {
		return "", "", nil, false
	}
	path = d.resolvePath(p)
	display := p
	if !filepath.IsAbs(p) {
		display = filepath.Join(filepath.Dir(d.filename), p)
	}
	b, err := readPromptFile(path)
	if err != nil {
		d.errorAt(a.Expr.Range(), "Cannot read prompt file",
			fmt.Sprintf("Reading %s failed: %v. The path is relative to the run file's directory; check it exists and is readable.", display, unwrapPathError(err)))
		return "", "", nil, false
	}
	if !utf8.Valid(b) {
		d.errorAt(a.Expr.Range(), "Prompt file is not UTF-8 text",
			fmt.Sprintf("%s must be UTF-8 text; convert it or choose another file.", display))
		return "", "", nil, false
	}
	expr, diags := hclsyntax.ParseTemplate(b, display, hclv2.InitialPos)
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() {
		return "", "", nil, false
	}
	vars := expr.Variables()
	refs, ok = d.templateRefs(vars, "prompt")
	if !ok || !d.checkTemplate(expr) {
		return "", "", refs, false
	}
	return path, string(b), refs, true
}

// MaxPromptFileBytes is the largest prompt_file accepted, in bytes. The
// prompt is stored in the run's definition event, so it must stay small.
const MaxPromptFileBytes = 1 << 20

// readPromptFile reads a regular file of at most MaxPromptFileBytes. A
// device or named pipe could block decoding forever, so the path is
// examined before it is opened, opened without blocking, and the opened
// file examined again (it may have been replaced in between).
func readPromptFile(path string) ([]byte, error) {
	if info, err := os.Stat(path); err != nil {
		return nil, err
	} else if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("it is %s, not a file", fileKind(info.Mode()))
	}
	f, err := openNonblocking(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("it is %s, not a file", fileKind(info.Mode()))
	}
	if info.Size() > MaxPromptFileBytes {
		return nil, fmt.Errorf("%d bytes is more than the limit of %d bytes", info.Size(), MaxPromptFileBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxPromptFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxPromptFileBytes {
		return nil, fmt.Errorf("more than the limit of %d bytes", MaxPromptFileBytes)
	}
	return b, nil
}

// unwrapPathError drops the path from an *fs.PathError, which the
// diagnostic already names.
func unwrapPathError(err error) error {
	type unwrapper interface{ Unwrap() error }
	if u, ok := err.(unwrapper); ok && u.Unwrap() != nil {
		return u.Unwrap()
	}
	return err
}

// input decodes a node input to JSON. Strings in it are stored as
// template-mode source: constant strings escaped, templates converted.
func (d *decoder) input(a *hclv2.Attribute) (json.RawMessage, []resultRef, bool) {
	v, refs, ok := d.inputValue(a.Expr.(hclsyntax.Expression), "input")
	if !ok || v.IsNull() {
		return nil, refs, ok
	}
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		d.errorAt(a.Expr.Range(), "Invalid input", fmt.Sprintf("input must be a value that can be written as JSON (%v).", err))
		return nil, refs, false
	}
	return b, refs, true
}

// inputValue decodes one value of an input; field is its path.
func (d *decoder) inputValue(expr hclsyntax.Expression, field string) (cty.Value, []resultRef, bool) {
	switch e := expr.(type) {
	case *hclsyntax.ObjectConsExpr:
		items, _ := d.objectItems(e, field)
		attrs := make(map[string]cty.Value, len(items))
		var refs []resultRef
		ok := len(items) == len(e.Items)
		for _, it := range items {
			v, r, k := d.inputValue(it.Value, joinField(field, it.Key))
			refs = append(refs, r...)
			ok = ok && k
			attrs[it.Key] = v
		}
		if !ok {
			return cty.NilVal, refs, false
		}
		return cty.ObjectVal(attrs), refs, true
	case *hclsyntax.TupleConsExpr:
		elems := make([]cty.Value, 0, len(e.Exprs))
		var refs []resultRef
		ok := true
		for i, x := range e.Exprs {
			v, r, k := d.inputValue(x, fmt.Sprintf("%s[%d]", field, i))
			refs = append(refs, r...)
			ok = ok && k
			elems = append(elems, v)
		}
		if !ok {
			return cty.NilVal, refs, false
		}
		return cty.TupleVal(elems), refs, true
	}
	vars := expr.Variables()
	if len(vars) == 0 {
		v, diags := expr.Value(newEvalContext(nil))
		d.diags = append(d.diags, diags...)
		if diags.HasErrors() {
			return cty.NilVal, nil, false
		}
		if !v.IsWhollyKnown() {
			d.errorAt(expr.Range(), "Value not known at decode time", fmt.Sprintf("%s must be a constant or a template referring to input.results.", field))
			return cty.NilVal, nil, false
		}
		return escapeValue(v), nil, true
	}
	refs, refsOK := d.templateRefs(vars, "input")
	if !refsOK || !d.checkTemplate(expr) {
		return cty.NilVal, refs, false
	}
	src, refs, ok := d.storedTemplate(expr, refs)
	if !ok {
		return cty.NilVal, refs, false
	}
	return cty.StringVal(src), refs, true
}

// escapeValue escapes every string in a constant input value so that
// RenderInput renders it to itself.
func escapeValue(v cty.Value) cty.Value {
	out, err := cty.Transform(v, func(_ cty.Path, v cty.Value) (cty.Value, error) {
		if v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
			return cty.StringVal(escapeLiteral(v.AsString())), nil
		}
		return v, nil
	})
	if err != nil {
		return v
	}
	return out
}
