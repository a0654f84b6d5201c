package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/plugin"
)

// Cases about the unary calls: health, Describe, Configure, Admit.

func caseHealth(ctx context.Context, k *kit) verdict {
	s, err := k.launch(ctx)
	if err != nil {
		return fail("launch: %v", err)
	}
	defer s.close()
	hctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	start := time.Now()
	if err := s.c.Health(hctx); err != nil {
		return fail("%v", err)
	}
	return pass("SERVING in %s", time.Since(start).Round(time.Millisecond))
}

func caseDescribe(ctx context.Context, k *kit) verdict {
	s, err := k.launch(ctx)
	if err != nil {
		return fail("launch: %v", err)
	}
	defer s.close()
	var answers []*plugin.Description
	for range 3 {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		d, err := s.describe(dctx)
		cancel()
		if err != nil {
			return fail("Describe: %v", err)
		}
		answers = append(answers, d)
	}
	d := answers[0]
	var problems []string
	if !plugin.ValidDescribedName(d.Name) {
		problems = append(problems, fmt.Sprintf("name %q does not follow the id grammar %s", d.Name, plugin.DescribedNameGrammar))
	}
	if strings.TrimSpace(d.Version) == "" {
		problems = append(problems, "version is empty")
	}
	if !slices.Contains(d.Types, k.typ) {
		problems = append(problems, fmt.Sprintf("types %v do not include %s", d.Types, k.typ))
	}
	seenKinds := map[plugin.FailureKind]bool{}
	for _, fk := range d.FailureKinds {
		if seenKinds[fk] {
			problems = append(problems, fmt.Sprintf("failure kind %s listed twice", fk))
		}
		seenKinds[fk] = true
	}
	for i, other := range answers[1:] {
		if diff := cmp.Diff(d, other); diff != "" {
			problems = append(problems, fmt.Sprintf("answer %d differs from the first (-first +later): %s", i+2, oneLine(diff)))
		}
	}
	seen := fmt.Sprintf("name %q, version %q, types %v, capabilities %+v, %d failure kinds", d.Name, d.Version, d.Types, d.Capabilities, len(d.FailureKinds))
	if len(problems) > 0 {
		return fail("%s: %s", seen, strings.Join(problems, "; "))
	}
	return pass("%s; the same three times", seen)
}

func caseConfigureValid(ctx context.Context, k *kit) verdict {
	s, err := k.launch(ctx)
	if err != nil {
		return fail("launch: %v", err)
	}
	defer s.close()
	diags, err := s.configure(ctx, k.opts.Config)
	if err != nil {
		return fail("Configure failed as a call: %v", err)
	}
	if msg := errorDiagnostics(diags); msg != "" {
		return fail("error diagnostics: %s", msg)
	}
	if len(diags) > 0 {
		return pass("%d warning(s), no errors", len(diags))
	}
	return pass("no diagnostics")
}

func caseConfigureInvalid(ctx context.Context, k *kit) verdict {
	s, err := k.launch(ctx)
	if err != nil {
		return fail("launch: %v", err)
	}
	defer s.close()
	invalid := k.opts.InvalidConfig
	if len(invalid) == 0 {
		invalid = DefaultInvalidConfig
	}
	diags, err := s.configure(ctx, invalid)
	if err != nil {
		return fail("Configure(%s) failed as a call instead of answering with diagnostics: %v", invalid, err)
	}
	msg := errorDiagnostics(diags)
	if msg == "" {
		return fail("Configure(%s) accepted it (%d diagnostics, none an error)", invalid, len(diags))
	}
	if err := s.serving(ctx); err != nil {
		return fail("answered %q, but then: %v", msg, err)
	}
	return pass("Configure(%s): %s; the plugin keeps serving", invalid, msg)
}

func caseAdmit(ctx context.Context, k *kit) verdict {
	s, err := k.launchConfigured(ctx)
	if err != nil {
		return fail("%v", err)
	}
	defer s.close()
	before, counted := int64(0), k.service
	if counted {
		if before, err = s.c.Conformance().ModelCalls(ctx); err != nil {
			return fail("Conformance.ModelCalls: %v", err)
		}
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	start := time.Now()
	resp, err := s.engine.Admit(actx, plugin.AdmitRequest{Target: k.target})
	elapsed := time.Since(start).Round(time.Millisecond)
	var f *plugin.Failure
	switch {
	case errors.As(err, &f):
		return fail("Admit(%s) failed %s: %s; a target the kit can run must be a selection or unsupported", identityString(k.target), f.Kind, f.Message)
	case err != nil:
		return fail("Admit(%s): %v", identityString(k.target), err)
	}
	var seen string
	if resp.Supported {
		seen = "selection " + identityString(resp.Selection)
	} else {
		seen = fmt.Sprintf("unsupported (%q)", resp.Reason)
	}
	seen += " in " + elapsed.String()
	if !counted {
		return pass("%s; model calls not observable (no Conformance service)", seen)
	}
	after, err := s.c.Conformance().ModelCalls(ctx)
	if err != nil {
		return fail("%s; Conformance.ModelCalls: %v", seen, err)
	}
	if after != before {
		return fail("%s, but the plugin's model calls went from %d to %d", seen, before, after)
	}
	return pass("%s; model calls %d → %d", seen, before, after)
}

// identityString writes an identity compactly.
func identityString(id plugin.Identity) string {
	return fmt.Sprintf("{adapter %q provider %q family %q model %q tools %v}", id.Adapter, id.Provider, id.ModelFamily, id.Model, id.Tools)
}
