package hcl

import (
	"fmt"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// nodeAttrNames are the attributes of a node block.
var nodeAttrNames = []string{"kind", "lane", "binding", "prompt", "prompt_file", "input",
	"depends_on", "retry_safe", "timeout", "key", "approval", "for_each", "max_items"}

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
