package hcl

import "fmt"

// checkBindings diagnoses node lanes and bindings that name nothing
// suitable.
func (d *decoder) checkBindings(infos []*nodeInfo, rf *RunFile) {
	lanes := map[string]bool{}
	var laneNames []string
	for _, l := range rf.Lanes {
		lanes[l.Name] = true
		laneNames = append(laneNames, l.Name)
	}
	types := map[string]string{}
	var nodePlugins []string
	for _, p := range rf.Plugins {
		types[p.Name] = p.Type
		if p.Type == PluginTypeNode {
			nodePlugins = append(nodePlugins, p.Name)
		}
	}
	for _, info := range infos {
		n := info.n
		if a := info.attrs["lane"]; a != nil && n.Lane != "" && !lanes[n.Lane] {
			d.errorAt(a.Expr.Range(), fmt.Sprintf("Unknown lane %q", n.Lane),
				fmt.Sprintf("Node %q uses lane %q, but no lane %q { … } block declares it. Declare the lane or use a declared one.%s", n.ID, n.Lane, n.Lane, laneHint(n.Lane, types[n.Lane], laneNames, rf.Lanes)))
		}
		a := info.attrs["binding"]
		if a == nil || n.Binding == "" {
			continue
		}
		typ, exists := types[n.Binding]
		switch {
		case !exists && lanes[n.Binding]:
			d.errorAt(a.Expr.Range(), fmt.Sprintf("Unknown binding %q", n.Binding),
				fmt.Sprintf("Node %q uses binding %q, but %q is a lane, not a node plugin. Did you mean lane = %q (with a prompt)?", n.ID, n.Binding, n.Binding, n.Binding))
		case !exists:
			d.errorAt(a.Expr.Range(), fmt.Sprintf("Unknown binding %q", n.Binding),
				fmt.Sprintf("Node %q uses binding %q, but no plugin %q with type = \"node\" is declared. Declare it with plugin %q { type = \"node\" path = \"…\" }, or use a declared node plugin.%s", n.ID, n.Binding, n.Binding, n.Binding, didYouMean(n.Binding, nodePlugins)))
		case typ == PluginTypePolicy:
			d.errorAt(a.Expr.Range(), fmt.Sprintf("Binding %q is a policy plugin", n.Binding),
				fmt.Sprintf("Node %q uses %q as a binding, but that plugin has type = \"policy\": a policy decides whether attempts may take effect and is named in the graph's policy list, not by a node. Bindings need a plugin with type = \"node\".%s", n.ID, n.Binding, didYouMean(n.Binding, nodePlugins)))
		case typ == PluginTypeEngine:
			d.errorAt(a.Expr.Range(), fmt.Sprintf("Binding %q is an engine plugin", n.Binding),
				fmt.Sprintf("Node %q uses %q as a binding, but that plugin has type = \"engine\". Engines are reached through a lane (lane = \"<lane>\"); bindings need a plugin with type = \"node\".%s", n.ID, n.Binding, lanesOf(n.Binding, rf.Lanes)))
		}
	}
}

// laneHint is the suggestion for an unknown lane name: when it names a
// plugin (of type typ, "" for none), the attribute the user likely meant;
// otherwise the closest declared lane.
func laneHint(name, typ string, laneNames []string, lanes []Lane) string {
	switch typ {
	case PluginTypeNode:
		return fmt.Sprintf(" %q is a node plugin: did you mean binding = %q (with an input)?", name, name)
	case PluginTypeEngine:
		if hint := lanesOf(name, lanes); hint != "" {
			return fmt.Sprintf(" %q is an engine plugin, which nodes reach through a lane.%s", name, hint)
		}
		return fmt.Sprintf(" %q is an engine plugin, which nodes reach through a lane: declare lane %q { requested = { adapter = %q, … } }.", name, name, name)
	}
	return didYouMean(name, laneNames)
}

// lanesOf suggests the lanes that request or fall back to engine, "" when
// none does.
func lanesOf(engine string, lanes []Lane) string {
	var names []string
	for _, l := range lanes {
		uses := l.Requested.Adapter == engine
		for _, f := range l.Fallbacks {
			uses = uses || f.Adapter == engine
		}
		if uses {
			names = append(names, l.Name)
		}
	}
	switch len(names) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf(" Did you mean lane = %q (it uses %q)?", names[0], engine)
	}
	return fmt.Sprintf(" Lanes using %q: %s.", engine, quoteList(names))
}
