package hcl

import (
	"fmt"
	"slices"

	hclv2 "github.com/hashicorp/hcl/v2"
)

// launchTarget is a lane target calls go to (requested or a fallback),
// with where it is written.
type launchTarget struct {
	Target
	where string
	rng   hclv2.Range
}

// laneTargets is a decoded lane and its launch targets.
type laneTargets struct {
	lane    Lane
	targets []launchTarget
}

// checkProviders diagnoses the launch targets of every lane whose provider
// cannot be known; a target whose adapter is not a declared engine is
// diagnosed for that already and skipped.
func (d *decoder) checkProviders(rf *RunFile) {
	engines := map[string]bool{}
	for _, p := range rf.Plugins {
		engines[p.Name] = p.Type == PluginTypeEngine
	}
	for _, lt := range d.launched {
		for _, t := range lt.targets {
			if engines[t.Adapter] {
				d.checkProvider(lt.lane, t)
			}
		}
	}
}

// RecoverProvider returns the provider of lane target t: its own, or —
// when it names none — the one provider the lane's other identities
// (requested, known_substitutions, fallbacks) give for the same adapter
// and, when t names a model, the same model or none. candidates lists the
// providers found when there is not exactly one (none, or several); then
// provider is "" and the target's identity is unresolved
// (ENGINE_IDENTITY_UNRESOLVED, docs/decisions.md "Identity").
func RecoverProvider(l Lane, t Target) (provider string, candidates []string) {
	if t.Provider != "" {
		return t.Provider, nil
	}
	ids := append(append([]Target{l.Requested}, l.KnownSubstitutions...), l.Fallbacks...)
	for _, o := range ids {
		if o.Adapter != t.Adapter || o.Provider == "" || (t.Model != "" && o.Model != "" && o.Model != t.Model) {
			continue
		}
		if !slices.Contains(candidates, o.Provider) {
			candidates = append(candidates, o.Provider)
		}
	}
	if len(candidates) == 1 {
		return candidates[0], nil
	}
	return "", candidates
}

// checkProvider diagnoses a lane target whose provider is neither written
// nor recoverable from the lane: a call to it could not say whose model it
// used, so the run is refused before any work.
func (d *decoder) checkProvider(l Lane, t launchTarget) {
	p, candidates := RecoverProvider(l, t.Target)
	if p != "" {
		return
	}
	why := fmt.Sprintf("no other identity of the lane names a provider for adapter %q", t.Adapter)
	if len(candidates) > 1 {
		why = fmt.Sprintf("the lane names several providers for adapter %q (%s), so none can be taken for it", t.Adapter, quoteList(candidates))
	}
	d.errorAt(t.rng, fmt.Sprintf("Lane %q: the %s target has no provider", l.Name, t.where),
		fmt.Sprintf("ENGINE_IDENTITY_UNRESOLVED: every target a node's engine call goes to names its provider, so the record says whose model answered; %s. Add provider = \"…\" to this target (for example provider = \"anthropic\").", why))
}
