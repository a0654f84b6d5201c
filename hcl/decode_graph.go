package hcl

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
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
	Blocks: []hclv2.BlockHeaderSchema{{Type: "node", LabelNames: []string{"id"}}},
}

// nodeAttrNames are the attributes of a node block.
var nodeAttrNames = []string{"kind", "lane", "binding", "prompt", "prompt_file", "input",
	"depends_on", "retry_safe", "timeout", "key", "approval"}

// nodeInfo is a decoded node with the source ranges validation needs.
type nodeInfo struct {
	idx       int // index in Graph.Nodes
	blk       *hclv2.Block
	attrs     hclv2.Attributes
	depRanges []hclv2.Range
	refs      []resultRef
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
	byID := map[string]*nodeInfo{}
	for _, nb := range content.Blocks {
		info := d.node(nb, &g)
		infos = append(infos, info)
		if _, dup := byID[g.Nodes[info.idx].ID]; !dup {
			byID[g.Nodes[info.idx].ID] = info
		}
	}
	d.uniqueNames("node", content.Blocks)
	if len(content.Blocks) == 0 {
		d.errorAt(blk.DefRange, "Empty graph",
			"The graph has no nodes. Add at least one node block, for example node \"draft\" { lane = \"writer\" prompt = \"…\" }.")
		return g
	}

	d.checkBindings(&g, infos, rf)
	edgesOK := d.checkEdges(&g, infos, byID)
	if edgesOK {
		edgesOK = d.checkCycles(&g, infos, byID)
	}
	d.checkKeys(&g, infos, keyRanges)
	if a := attrs["approval"]; a != nil {
		d.approval(a, &g, byID)
	}
	d.policy(attrs, &g, rf)
	d.checkRefs(&g, infos, byID, edgesOK)
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

// node decodes one node block and appends it to g.Nodes.
func (d *decoder) node(blk *hclv2.Block, g *Graph) *nodeInfo {
	n := Node{ID: blk.Labels[0], Kind: KindRequired, Range: rangeOf(blk.DefRange)}
	d.checkName("node", n.ID, blk.LabelRanges[0])
	attrs := d.attrs(blk.Body.(*hclsyntax.Body), nodeAttrNames...)
	info := &nodeInfo{blk: blk, attrs: attrs}

	if a := attrs["kind"]; a != nil {
		if s, ok := d.enum(a, KindRequired, KindOptional, KindFinalizer); ok {
			n.Kind = s
		}
	}
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
	info.idx = len(g.Nodes)
	g.Nodes = append(g.Nodes, n)
	return info
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
	refs = d.templateRefs(vars, "prompt")
	if len(refs) != len(vars) || !d.checkTemplate(expr) {
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
	refs = d.templateRefs(vars, "prompt")
	if len(refs) != len(vars) || !d.checkTemplate(expr) {
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
	refs := d.templateRefs(vars, "input")
	if len(refs) != len(vars) || !d.checkTemplate(expr) {
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

// checkEdges diagnoses depends_on entries that are unknown, the node
// itself, repeated, or that touch a finalizer. It reports whether every
// edge is valid.
func (d *decoder) checkEdges(g *Graph, infos []*nodeInfo, byID map[string]*nodeInfo) bool {
	ok := true
	ids := make([]string, 0, len(infos))
	for _, info := range infos {
		ids = append(ids, g.Nodes[info.idx].ID)
	}
	for _, info := range infos {
		n := &g.Nodes[info.idx]
		if len(n.DependsOn) == 0 {
			continue
		}
		if n.Kind == KindFinalizer {
			a := info.attrs["depends_on"]
			d.errorAt(a.NameRange, fmt.Sprintf("Finalizer %q has depends_on", n.ID),
				"Finalizers have no edges: they run after every other node has settled, on success and on failure, and receive the results of every node that passed. Remove depends_on (the prompt can still use ${input.results.<node>}), or change kind to \"required\" to order this node.")
			ok = false
			continue
		}
		seen := map[string]bool{}
		for i, dep := range n.DependsOn {
			rng := info.depRanges[i]
			target, exists := byID[dep]
			switch {
			case dep == n.ID:
				d.errorAt(rng, fmt.Sprintf("Node %q depends on itself", n.ID),
					fmt.Sprintf("Remove %q from its own depends_on.", n.ID))
				ok = false
			case !exists:
				d.errorAt(rng, fmt.Sprintf("Unknown node %q in depends_on", dep),
					fmt.Sprintf("Node %q depends on %q, but the graph has no node with that id. Fix the id or add the node.%s", n.ID, dep, didYouMean(dep, ids)))
				ok = false
			case seen[dep]:
				d.errorAt(rng, fmt.Sprintf("Duplicate dependency %q", dep),
					fmt.Sprintf("Node %q lists %q more than once in depends_on; remove the repeat.", n.ID, dep))
				ok = false
			case g.Nodes[target.idx].Kind == KindFinalizer:
				d.errorAt(rng, fmt.Sprintf("Node %q depends on finalizer %q", n.ID, dep),
					fmt.Sprintf("Finalizers have no edges: they run last, after every other node has settled, so nothing can depend on %q. Remove it from depends_on, or change %q's kind to \"required\".", dep, dep))
				ok = false
			}
			seen[dep] = true
		}
	}
	return ok
}

// checkCycles diagnoses dependency cycles, naming each one found. It is
// called only when every edge is valid. It reports whether the graph is
// acyclic.
func (d *decoder) checkCycles(g *Graph, infos []*nodeInfo, byID map[string]*nodeInfo) bool {
	const (
		unvisited = iota
		onStack
		done
	)
	state := make(map[string]int, len(infos))
	var stack []string
	acyclic := true
	var visit func(info *nodeInfo)
	visit = func(info *nodeInfo) {
		n := &g.Nodes[info.idx]
		state[n.ID] = onStack
		stack = append(stack, n.ID)
		for i, dep := range n.DependsOn {
			switch state[dep] {
			case unvisited:
				visit(byID[dep])
			case onStack:
				start := len(stack) - 1
				for stack[start] != dep {
					start--
				}
				cycle := append(append([]string{}, stack[start:]...), dep)
				d.errorAt(info.depRanges[i], "Dependency cycle: "+strings.Join(cycle, " → "),
					fmt.Sprintf("The nodes %s depend on each other in a cycle (each arrow points from a node to one it depends on), so none of them could ever start. Remove one of these depends_on entries; this one, from %q to %q, closes the cycle.", quoteList(cycle[:len(cycle)-1]), n.ID, dep))
				acyclic = false
			}
		}
		stack = stack[:len(stack)-1]
		state[n.ID] = done
	}
	for _, info := range infos {
		if byID[g.Nodes[info.idx].ID] != info {
			continue // a duplicate id, already diagnosed
		}
		if state[g.Nodes[info.idx].ID] == unvisited {
			visit(info)
		}
	}
	return acyclic
}

// checkKeys diagnoses node keys missing from keyed_concurrency.
func (d *decoder) checkKeys(g *Graph, infos []*nodeInfo, keyRanges map[string]hclv2.Range) {
	var keys []string
	for _, kl := range g.KeyedConcurrency {
		keys = append(keys, kl.Key)
	}
	for _, info := range infos {
		n := &g.Nodes[info.idx]
		if n.Key == "" {
			continue
		}
		if _, ok := keyRanges[n.Key]; !ok {
			d.errorAt(info.attrs["key"].Expr.Range(), fmt.Sprintf("Unknown concurrency key %q", n.Key),
				fmt.Sprintf("Node %q uses key %q, but the graph's keyed_concurrency has no entry for it. Add one, for example keyed_concurrency = { %s = 1 }, or use a declared key.%s", n.ID, n.Key, keyLiteral(n.Key), didYouMean(n.Key, keys)))
		}
	}
}

// keyLiteral renders an object key as it must be written in HCL.
func keyLiteral(k string) string {
	if hclsyntax.ValidIdentifier(k) {
		return k
	}
	return fmt.Sprintf("%q", k)
}

// approval decodes the graph's approval list and marks the nodes.
func (d *decoder) approval(a *hclv2.Attribute, g *Graph, byID map[string]*nodeInfo) {
	names, ranges, ok := d.strList(a, `a list of node ids, for example approval = ["draft"]`)
	if !ok {
		return
	}
	var ids []string
	for _, n := range g.Nodes {
		ids = append(ids, n.ID)
	}
	seen := map[string]bool{}
	for i, name := range names {
		info, exists := byID[name]
		switch {
		case !exists:
			d.errorAt(ranges[i], fmt.Sprintf("Unknown node %q in approval", name),
				fmt.Sprintf("approval lists nodes that wait for `obversa approve` before they run, but the graph has no node %q. Fix the id or remove it.%s", name, didYouMean(name, ids)))
		case seen[name]:
			d.errorAt(ranges[i], fmt.Sprintf("Duplicate node %q in approval", name), "Remove the repeated entry.")
		default:
			g.Nodes[info.idx].Approval = true
		}
		seen[name] = true
	}
	g.Approval = nil
	for _, n := range g.Nodes {
		if n.Approval {
			g.Approval = append(g.Approval, n.ID)
		}
	}
}

// checkRefs diagnoses template references to results a node cannot see:
// a node sees its transitive dependencies; a finalizer sees every node
// that is not a finalizer. Dependency checks need a valid acyclic graph
// (acyclic); the other checks run regardless.
func (d *decoder) checkRefs(g *Graph, infos []*nodeInfo, byID map[string]*nodeInfo, acyclic bool) {
	var ids []string
	for _, n := range g.Nodes {
		ids = append(ids, n.ID)
	}
	for _, info := range infos {
		n := &g.Nodes[info.idx]
		var reach map[string]bool
		needed := map[string]bool{}
		for _, ref := range info.refs {
			needed[ref.Node] = true
		}
		for _, ref := range info.refs {
			target, exists := byID[ref.Node]
			switch {
			case ref.Node == n.ID:
				d.errorAt(ref.Range, fmt.Sprintf("Node %q refers to its own result", n.ID),
					fmt.Sprintf("%s is the result of this node, which does not exist yet when it runs. Refer to the result of a node it depends on.", ref.Text))
			case !exists:
				d.errorAt(ref.Range, fmt.Sprintf("Unknown node %q in reference %s", ref.Node, ref.Text),
					fmt.Sprintf("The graph has no node %q. Fix the id.%s", ref.Node, didYouMean(ref.Node, ids)))
			case n.Kind == KindFinalizer:
				if g.Nodes[target.idx].Kind == KindFinalizer {
					d.errorAt(ref.Range, fmt.Sprintf("Finalizer %q refers to finalizer %q", n.ID, ref.Node),
						"A finalizer receives the results of the nodes that are not finalizers; finalizers are not ordered among themselves, so one cannot use another's result. Remove this reference.")
				}
			case acyclic:
				if reach == nil {
					reach = dependencies(g, byID, info, needed)
				}
				if !reach[ref.Node] {
					d.errorAt(ref.Range, fmt.Sprintf("Node %q does not depend on %q", n.ID, ref.Node),
						fmt.Sprintf("%s is only available to nodes that depend on %q, directly or through other nodes. Add %q to the depends_on of %q.", ref.Text, ref.Node, ref.Node, n.ID))
				}
			}
			// An engine node's result is its final text: there is nothing
			// inside it to refer to.
			if exists && ref.Deeper && g.Nodes[target.idx].Lane != "" {
				d.errorAt(ref.Range, fmt.Sprintf("The result of engine node %q is text", ref.Node),
					fmt.Sprintf("%s goes into the result of %q, but an engine node's result is its final answer as a string. Refer to it whole, as ${input.results.%s}.", ref.Text, ref.Node, ref.Node))
			}
		}
	}
}

// dependencies returns transitive dependencies of a node: all of them, or
// at least every one in needed (the search stops once all are found, which
// keeps the common case — references to direct dependencies — linear).
func dependencies(g *Graph, byID map[string]*nodeInfo, info *nodeInfo, needed map[string]bool) map[string]bool {
	reach := map[string]bool{}
	missing := len(needed)
	queue := append([]string{}, g.Nodes[info.idx].DependsOn...)
	for len(queue) > 0 && missing > 0 {
		id := queue[0]
		queue = queue[1:]
		if reach[id] {
			continue
		}
		reach[id] = true
		if needed[id] {
			missing--
		}
		if next, ok := byID[id]; ok {
			queue = append(queue, g.Nodes[next.idx].DependsOn...)
		}
	}
	return reach
}
