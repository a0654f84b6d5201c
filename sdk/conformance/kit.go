package conformance

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/plugin"
)

// kit is the state of one check.
type kit struct {
	bin, sha string
	opts     Options
	typ      plugin.Type
	env      []string
	logger   hclog.Logger
	// desc is the plugin's Describe answer, nil when it could not be had.
	desc *plugin.Description
	// target is the identity Admit and Run ask for.
	target plugin.Identity
	// service is true when the plugin serves the Conformance service;
	// kinds are the scenario kinds it offers.
	service bool
	kinds   map[plugin.ScenarioKind]bool
	seq     atomic.Int64
	// over says why the check's time ended, once it has.
	over func() string
}

// probeTimeout bounds the probe's launch, Describe and Scenarios calls.
const probeTimeout = 20 * time.Second

// probe launches the plugin once to learn its description and how it can
// be asked for scenarios.
func (k *kit) probe(ctx context.Context) {
	k.target = k.opts.target("")
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	s, err := k.launch(pctx)
	if err != nil {
		return
	}
	defer s.close()
	if d, err := s.describe(pctx); err == nil {
		k.desc = d
		k.target = k.opts.target(d.Name)
	}
	if k.typ != plugin.TypeEngine {
		return
	}
	kinds, err := s.c.Conformance().Scenarios(pctx)
	if err != nil {
		return
	}
	k.service = true
	k.kinds = map[plugin.ScenarioKind]bool{}
	for _, kind := range kinds {
		k.kinds[kind] = true
	}
}

func (k *kit) pluginName() string {
	if k.desc == nil {
		return ""
	}
	return strings.TrimSpace(k.desc.Name + " " + k.desc.Version)
}

func (k *kit) controlName() string {
	switch {
	case k.service:
		return "service"
	case len(k.opts.Scenarios) > 0:
		return "requests"
	default:
		return "none"
	}
}

// canAsk reports whether the plugin can be asked for s, or why not.
func (k *kit) canAsk(s plugin.Scenario) (bool, string) {
	if k.service {
		if k.kinds[s.Kind] {
			return true, ""
		}
		return false, fmt.Sprintf("the plugin's Conformance service does not offer the %s scenario", s.Kind)
	}
	if _, ok := k.opts.Scenarios[s.String()]; ok {
		return true, ""
	}
	if len(k.opts.Scenarios) > 0 {
		return false, fmt.Sprintf("no request for scenario %q in the conformance options", s)
	}
	return false, "the plugin serves no Conformance service and the options give no scenario requests"
}

// ask prepares req, on session s, to produce sc: it arms the scenario
// through the Conformance service, or rewrites req with the scenario's
// request.
func (k *kit) ask(ctx context.Context, s *session, req *plugin.RunRequest, sc plugin.Scenario) error {
	if k.service {
		if err := s.c.Conformance().Arm(ctx, req.AttemptID, sc); err != nil {
			return fmt.Errorf("arming scenario %s: %w", sc, err)
		}
		return nil
	}
	sr, ok := k.opts.Scenarios[sc.String()]
	if !ok {
		return fmt.Errorf("no request for scenario %q", sc)
	}
	req.Prompt = sr.Prompt
	return nil
}

// defaultPrompt is the prompt of the kit's ordinary Runs.
const defaultPrompt = "Say hello to the Obversa conformance kit."

// runDeadline is the attempt deadline sent with the kit's Runs.
const runDeadline = 30 * time.Second

// request returns an ordinary Run request with a fresh attempt id.
func (k *kit) request(caseName string) plugin.RunRequest {
	n := k.seq.Add(1)
	node := strings.ReplaceAll(caseName, ".", "-")
	return plugin.RunRequest{
		Purpose:   plugin.PurposeOrdinary,
		RunID:     "conformance",
		NodeID:    node,
		Position:  fmt.Sprintf("dag/%s/%d", node, n),
		AttemptID: fmt.Sprintf("conformance-%s-%d", node, n),
		Target:    k.target,
		Prompt:    defaultPrompt,
		Timeout:   runDeadline,
	}
}
