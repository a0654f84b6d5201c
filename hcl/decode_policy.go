package hcl

import (
	"fmt"

	hclv2 "github.com/hashicorp/hcl/v2"
)

// policy decodes the graph's policy list and policy_timeout: each name a
// plugin of type "policy", once. A policy plugin the list does not name is
// a warning: it would be launched and never asked.
func (d *decoder) policy(attrs hclv2.Attributes, g *Graph, rf *RunFile) {
	if a := attrs["policy_timeout"]; a != nil {
		if v, ok := d.duration(a, positiveDuration, "10s"); ok {
			g.PolicyTimeout = v
		}
	}
	types := map[string]string{}
	var policies []string
	for _, p := range rf.Plugins {
		types[p.Name] = p.Type
		if p.Type == PluginTypePolicy {
			policies = append(policies, p.Name)
		}
	}
	named := map[string]bool{}
	listed := true // the list decoded without a mistake
	if a := attrs["policy"]; a != nil {
		names, ranges, ok := d.strList(a, `a list of policy plugin names, for example policy = ["guard"]`)
		listed = ok
		if ok {
			for i, name := range names {
				typ, exists := types[name]
				switch {
				case named[name]:
					d.errorAt(ranges[i], fmt.Sprintf("Duplicate policy %q", name), "A policy is asked once per attempt; remove the repeated entry.")
				case !exists:
					d.errorAt(ranges[i], fmt.Sprintf("Unknown policy %q", name),
						fmt.Sprintf("policy lists the plugins asked before every attempt's effects, but no plugin %q is declared. Declare it with plugin %q { type = \"policy\" path = \"…\" }, or name a declared policy.%s", name, name, didYouMean(name, policies)))
				case typ != PluginTypePolicy:
					d.errorAt(ranges[i], fmt.Sprintf("Plugin %q is not a policy", name),
						fmt.Sprintf("policy lists plugins with type = \"policy\", but %q has type = %q.%s", name, typ, didYouMean(name, policies)))
				default:
					g.Policy = append(g.Policy, name)
					named[name] = true
					continue
				}
				listed = false
				named[name] = true
			}
		}
	}
	for _, p := range rf.Plugins {
		// A list with a mistake is diagnosed already; which policy it
		// meant is not known.
		if listed && p.Type == PluginTypePolicy && !named[p.Name] {
			d.warnAt(p.Ranges.Block, fmt.Sprintf("Policy %q is never asked", p.Name),
				fmt.Sprintf("Plugin %q has type = \"policy\", but the graph's policy list does not name it, so it would be launched and never asked. Add it: graph \"dag\" { policy = [%q] }.", p.Name, p.Name))
		}
	}
}
