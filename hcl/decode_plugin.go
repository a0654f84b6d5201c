package hcl

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// Plugin types.
const (
	PluginTypeEngine = "engine"
	PluginTypeNode   = "node"
	PluginTypePolicy = "policy"
)

// Lane preflight values.
const (
	LiveRequired           = "required"
	LiveSkip               = "skip"
	UnsupportedStaticBlock = "block"
	UnsupportedStaticAllow = "allow"
)

// plugin decodes a `plugin "<name>"` block.
// It returns the plugin even when some attributes are invalid (the
// diagnostics say so), so that references to it are not reported again.
func (d *decoder) plugin(blk *hclv2.Block) Plugin {
	p := Plugin{Name: blk.Labels[0], Range: rangeOf(blk.DefRange)}
	p.Ranges = PluginRanges{Block: blk.DefRange, Path: blk.DefRange, SHA256: blk.DefRange, Config: blk.DefRange}
	d.checkName("plugin", p.Name, blk.LabelRanges[0])
	attrs, confines := d.pluginContent(blk.Body.(*hclsyntax.Body))

	if a := d.required(attrs, "type", blk, `type = "engine" (a model adapter used by lanes), type = "node" (a binding used by nodes) or type = "policy" (an action policy the graph's policy list names)`); a != nil {
		if s, ok := d.enum(a, PluginTypeEngine, PluginTypeNode, PluginTypePolicy); ok {
			p.Type = s
		}
	}
	if a := d.required(attrs, "path", blk, `path = "<plugin binary>", relative to the run file, for example path = "bin/cmd-engine"`); a != nil {
		if s, ok := d.nonEmptyStr(a, `the plugin binary's path, for example path = "bin/cmd-engine"`); ok {
			if abs, ok := d.resolvePath(s, a.Expr.Range(), fmt.Sprintf("plugin %q's path", p.Name)); ok {
				p.Path, p.WrittenPath = abs, filepath.Clean(s)
			}
			p.Ranges.Path = a.Expr.Range()
		}
	}
	if a := attrs["sha256"]; a != nil {
		d.pluginDigest(a, &p)
	}
	if a := attrs["args"]; a != nil {
		if args, _, ok := d.strList(a, `a list of strings, for example args = ["--verbose"]`); ok {
			p.Args = args
		}
	}
	d.pluginEnv(attrs, &p)
	if a := attrs["config"]; a != nil {
		p.Ranges.Config, p.Ranges.config = a.Expr.Range(), a.Expr.(hclsyntax.Expression)
		if v, ok := d.static(a); ok {
			b, err := ctyjson.Marshal(v, v.Type())
			if err != nil {
				d.errorAt(a.Expr.Range(), "Invalid config", fmt.Sprintf("config must be a value that can be written as JSON (%v).", err))
			} else {
				p.Config = b
			}
		}
	}
	if a := attrs["trusted_keys"]; a != nil {
		p.TrustedKeys, p.Ranges.TrustedKeys = d.trustedKeys(a)
	}
	if a := attrs["start_timeout"]; a != nil {
		if v, ok := d.duration(a, positiveDuration, "2m"); ok {
			p.StartTimeout = v
		}
	}
	d.confine(&p, confines)
	return p
}

// pluginDigest decodes a plugin's sha256 attribute a into p: 64
// lower-case hex digits.
func (d *decoder) pluginDigest(a *hclv2.Attribute, p *Plugin) {
	p.Ranges.SHA256 = a.Expr.Range()
	if s, ok := d.str(a, `a SHA-256 digest in hex, for example sha256 = "<64 hex digits>"`); ok {
		switch {
		case hexPattern64().MatchString(s):
			p.SHA256 = s
		case hexPattern64().MatchString(strings.ToLower(s)):
			d.errorAt(a.Expr.Range(), "sha256 must be lower-case hex",
				fmt.Sprintf("Write the digest in lower case: sha256 = %q.", strings.ToLower(s)))
		default:
			d.errorAt(a.Expr.Range(), "Invalid sha256 digest",
				fmt.Sprintf("sha256 must be exactly 64 lower-case hex digits (the SHA-256 of the plugin binary); got %d characters. Compute it with `sha256sum <binary>`, or remove the attribute and pin the digest with `obversa plugin lock`.", len(s)))
		}
	}
}

// pluginEnv decodes a plugin's env and pass_env attributes into p; each
// is kept only when all its names are environment variable names.
func (d *decoder) pluginEnv(attrs hclv2.Attributes, p *Plugin) {
	if a := attrs["env"]; a != nil {
		if env, ok := d.strMap(a, `an object of strings, for example env = { LOG_LEVEL = "debug" }`); ok {
			valid := true
			for _, k := range sortedKeys(env) {
				if !envNamePattern().MatchString(k) {
					d.errorAt(a.Expr.Range(), fmt.Sprintf("Invalid environment variable name %q", k),
						"Keys of env are environment variable names: letters, digits and '_', not starting with a digit, for example LOG_LEVEL.")
					valid = false
				}
			}
			if valid {
				p.Env = env
			}
		}
	}
	if a := attrs["pass_env"]; a != nil {
		if names, _, ok := d.strList(a, `a list of environment variable names, for example pass_env = ["ANTHROPIC_API_KEY"]`); ok {
			valid := true
			for _, k := range names {
				if !envNamePattern().MatchString(k) {
					d.errorAt(a.Expr.Range(), fmt.Sprintf("Invalid environment variable name %q", k),
						"pass_env lists environment variable names: letters, digits and '_', not starting with a digit, for example ANTHROPIC_API_KEY.")
					valid = false
				}
			}
			if valid {
				p.PassEnv = names
			}
		}
	}
}

// adapterRef is a lane target whose adapter must name an engine plugin.
type adapterRef struct {
	Lane    string
	Adapter string
	Where   string // "requested" or "fallbacks"
	Range   hclv2.Range
}

// laneSchema is the body of a lane block.
var laneSchema = &hclv2.BodySchema{
	Attributes: []hclv2.AttributeSchema{
		{Name: "requested"},
		{Name: "known_substitutions"},
		{Name: "fallbacks"},
	},
	Blocks: []hclv2.BlockHeaderSchema{{Type: "preflight"}},
}

// lane decodes a `lane "<name>"` block.
// Like plugin, it returns the lane even when parts of it are invalid.
func (d *decoder) lane(blk *hclv2.Block) Lane {
	l := Lane{Name: blk.Labels[0]}
	d.checkName("lane", l.Name, blk.LabelRanges[0])
	content, diags := blk.Body.Content(laneSchema)
	d.diags = append(d.diags, diags...)

	var launched []launchTarget // requested and fallbacks: the targets calls go to
	if a := d.required(content.Attributes, "requested", blk, `requested = { adapter = "<engine plugin>", provider = "…", model_family = "…", model = "…", tools = [] }`); a != nil {
		if t, ok := d.target(a.Expr, "requested"); ok {
			l.Requested = t
			d.adapterRefs = append(d.adapterRefs, adapterRef{Lane: l.Name, Adapter: t.Adapter, Where: "requested", Range: d.adapterRange(a.Expr)})
			launched = append(launched, launchTarget{t, "requested", a.Expr.Range()})
		}
	}
	if a := content.Attributes["known_substitutions"]; a != nil {
		l.KnownSubstitutions, _ = d.targets(a)
	}
	if a := content.Attributes["fallbacks"]; a != nil {
		var exprs []hclsyntax.Expression
		l.Fallbacks, exprs = d.targets(a)
		for i, t := range l.Fallbacks {
			d.adapterRefs = append(d.adapterRefs, adapterRef{Lane: l.Name, Adapter: t.Adapter, Where: "fallbacks", Range: d.adapterRange(exprs[i])})
			launched = append(launched, launchTarget{t, fmt.Sprintf("fallbacks[%d]", i), exprs[i].Range()})
		}
	}
	d.launched = append(d.launched, laneTargets{l, launched})
	for i, pb := range content.Blocks {
		if i > 0 {
			d.errorAt(pb.DefRange, "Duplicate preflight block",
				fmt.Sprintf("A lane has at most one preflight block; another is at %s. Merge them.", content.Blocks[0].DefRange.String()))
			continue
		}
		l.Preflight = d.lanePreflight(pb)
	}
	return l
}

func (d *decoder) lanePreflight(blk *hclv2.Block) *LanePreflight {
	p := &LanePreflight{Live: DefaultLaneLive, UnsupportedStatic: DefaultLaneUnsupportedStatic}
	attrs := d.attrs(blk.Body.(*hclsyntax.Body), "live", "unsupported_static")
	if a := attrs["live"]; a != nil {
		if s, ok := d.enum(a, LiveRequired, LiveSkip); ok {
			p.Live = s
		}
	}
	if a := attrs["unsupported_static"]; a != nil {
		if s, ok := d.enum(a, UnsupportedStaticBlock, UnsupportedStaticAllow); ok {
			p.UnsupportedStatic = s
		}
	}
	return p
}

// targetFix is the fix text shown for a malformed target.
const targetFix = `Write a target as an object: { adapter = "<engine plugin>", provider = "anthropic", model_family = "claude", model = "sonnet", tools = [] }.`

// targets decodes a list of targets and returns them with the expression
// each was decoded from.
func (d *decoder) targets(a *hclv2.Attribute) ([]Target, []hclsyntax.Expression) {
	tc, ok := a.Expr.(*hclsyntax.TupleConsExpr)
	if !ok {
		d.errorAt(a.Expr.Range(), fmt.Sprintf("Invalid %s", a.Name),
			fmt.Sprintf("%s must be a list of targets written as [ {…}, {…} ]. %s", a.Name, targetFix))
		return nil, nil
	}
	var out []Target
	var kept []hclsyntax.Expression
	for _, e := range tc.Exprs {
		if t, ok := d.target(e, a.Name); ok {
			out = append(out, t)
			kept = append(kept, e)
		}
	}
	return out, kept
}

// target decodes one target object.
func (d *decoder) target(expr hclv2.Expression, where string) (Target, bool) {
	items, ok := d.objectItems(expr, where)
	if !ok {
		d.errorAt(expr.Range(), fmt.Sprintf("Invalid target in %s", where), targetFix)
		return Target{}, false
	}
	t := Target{Tools: []string{}}
	valid := true
	seenAdapter := false
	for _, it := range items {
		a := &hclv2.Attribute{Name: it.Key, Expr: it.Value, Range: hclv2.RangeBetween(it.KeyRange, it.Value.Range()), NameRange: it.KeyRange}
		var dst *string
		switch it.Key {
		case "adapter":
			dst = &t.Adapter
			seenAdapter = true
		case "provider":
			dst = &t.Provider
		case "model_family":
			dst = &t.ModelFamily
		case "model":
			dst = &t.Model
		case "tools":
			tools, _, ok := d.strList(a, `a list of tool names, for example tools = ["bash"]`)
			if !ok {
				valid = false
				continue
			}
			t.Tools = tools
			continue
		default:
			d.errorAt(it.KeyRange, fmt.Sprintf("Unsupported target attribute %q", it.Key),
				"A target has the attributes adapter, provider, model_family, model and tools."+suggestOnly(it.Key, []string{"adapter", "provider", "model_family", "model", "tools"}))
			valid = false
			continue
		}
		s, ok := d.str(a, fmt.Sprintf(`a string, for example %s = "…"`, it.Key))
		if !ok {
			valid = false
			continue
		}
		*dst = s
	}
	if !seenAdapter || t.Adapter == "" {
		d.errorAt(expr.Range(), fmt.Sprintf("Missing adapter in %s target", where),
			`Every target names the engine plugin that serves it: add adapter = "<engine plugin name>".`)
		valid = false
	}
	return t, valid
}

// adapterRange returns the range of a target's adapter value, or of the
// target when it cannot be found.
func (d *decoder) adapterRange(expr hclv2.Expression) hclv2.Range {
	if oc, ok := expr.(*hclsyntax.ObjectConsExpr); ok {
		for _, it := range oc.Items {
			if hclv2.ExprAsKeyword(it.KeyExpr) == "adapter" {
				return it.ValueExpr.Range()
			}
		}
	}
	return expr.Range()
}

// checkLaneAdapters diagnoses requested and fallback targets whose adapter
// is not an engine plugin. Known substitutions are identities an engine may
// report, not launch targets, so they are not checked.
func (d *decoder) checkLaneAdapters(rf *RunFile) {
	types := map[string]string{}
	var engines []string
	for _, p := range rf.Plugins {
		types[p.Name] = p.Type
		if p.Type == PluginTypeEngine {
			engines = append(engines, p.Name)
		}
	}
	for _, r := range d.adapterRefs {
		typ, exists := types[r.Adapter]
		switch {
		case exists && typ != PluginTypeNode && typ != PluginTypePolicy:
			// An engine, or a plugin whose type is itself diagnosed.
		case exists:
			d.errorAt(r.Range, fmt.Sprintf("Adapter %q is a %s plugin", r.Adapter, typ),
				fmt.Sprintf("Lane %q uses %q as an engine in %s, but plugin %q has type = %q. Use an engine plugin here, or change that plugin's type to \"engine\".", r.Lane, r.Adapter, r.Where, r.Adapter, typ))
		default:
			d.errorAt(r.Range, fmt.Sprintf("Unknown engine adapter %q", r.Adapter),
				fmt.Sprintf("Lane %q uses adapter %q in %s, but no plugin %q with type = \"engine\" is declared. Declare it with plugin %q { type = \"engine\" path = \"…\" }, or use a declared engine.%s", r.Lane, r.Adapter, r.Where, r.Adapter, r.Adapter, didYouMean(r.Adapter, engines)))
		}
	}
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
