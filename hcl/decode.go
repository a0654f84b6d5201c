package hcl

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Defaults applied when the run file leaves a value out (docs/run-file.md).
const (
	DefaultProvider                    = "none"
	DefaultStorageDirectory            = ".obversa"
	DefaultNamespace                   = "default"
	DefaultMaxEventPayloadBytes        = 65536
	DefaultMaxBatchBytes               = 4194304
	DefaultMaxArtifactBytes            = 1048576
	DefaultMaxTotalArtifactBytesPerRun = 16777216
	DefaultTimeout                     = 30 * time.Minute
	DefaultMaxDispatches               = 200
	DefaultMaxRestarts                 = 3
	DefaultInitialBackoff              = time.Second
	DefaultMaxBackoff                  = 30 * time.Second
	DefaultTeardownGrace               = 5 * time.Second
	DefaultPreflightTimeout            = 20 * time.Second
	DefaultGlobalConcurrency           = 4
	DefaultRetryCapPerNode             = 1
	DefaultPolicyTimeout               = 10 * time.Second
	DefaultLaneLive                    = "skip"
	DefaultLaneUnsupportedStatic       = "block"
	DefaultMaxItems                    = 1000 // a for_each node's instances
)

// MaxRoundsLimit is the largest max_rounds a loop may set.
const MaxRoundsLimit = 100

// GraphForm is the only graph form (the label of the graph block).
const GraphForm = "dag"

// DecodeFile reads and decodes a run file; see Decode. A file that cannot
// be read is reported as an error diagnostic without a source range.
func DecodeFile(path string) (*RunFile, hclv2.Diagnostics) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, hclv2.Diagnostics{{
			Severity: hclv2.DiagError,
			Summary:  "Cannot read run file",
			Detail:   fmt.Sprintf("Reading %s failed: %v. Check the path and its permissions.", path, err),
		}}
	}
	return Decode(src, path)
}

// Decode parses and validates run-file source. filename names the file in
// diagnostics (as file:line:col) and locates it: relative paths in the file
// (workspace.root, storage.directory, plugin paths, prompt_file) are
// resolved against filepath.Dir(filename) made absolute.
//
// Every problem found is reported, each as an hclv2.Diagnostic with a
// Subject range, a Summary saying what is wrong and a Detail saying how to
// fix it. The returned RunFile is nil if and only if the diagnostics
// contain an error; warnings may accompany a valid RunFile.
func Decode(src []byte, filename string) (*RunFile, hclv2.Diagnostics) {
	dir, err := filepath.Abs(filepath.Dir(filename))
	if err != nil {
		return nil, hclv2.Diagnostics{{
			Severity: hclv2.DiagError,
			Summary:  "Cannot locate run file",
			Detail:   fmt.Sprintf("The directory of %s cannot be made absolute: %v.", filename, err),
		}}
	}
	file, diags := hclsyntax.ParseConfig(src, filename, hclv2.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	d := &decoder{filename: filename, dir: dir, src: src, diags: diags}
	rf := d.runFile(file.Body.(*hclsyntax.Body))
	if d.diags.HasErrors() {
		return nil, d.diags
	}
	return rf, d.diags
}

// runFileSchema is the top level of a run file.
var runFileSchema = &hclv2.BodySchema{
	Attributes: []hclv2.AttributeSchema{
		{Name: "teardown_grace"},
		{Name: "trusted_keys"},
	},
	Blocks: []hclv2.BlockHeaderSchema{
		{Type: "workspace"},
		{Type: "storage"},
		{Type: "limits"},
		{Type: "restart"},
		{Type: "preflight"},
		{Type: "plugin", LabelNames: []string{"name"}},
		{Type: "lane", LabelNames: []string{"name"}},
		{Type: "graph", LabelNames: []string{"form"}},
	},
}

// runFile decodes the top level.
func (d *decoder) runFile(body *hclsyntax.Body) *RunFile {
	rf := &RunFile{
		Filename: d.filename,
		Dir:      d.dir,
		Workspace: Workspace{
			Root:     d.dir,
			Provider: DefaultProvider,
		},
		Storage: Storage{
			Directory:                   filepath.Join(d.dir, DefaultStorageDirectory),
			Namespace:                   DefaultNamespace,
			MaxEventPayloadBytes:        DefaultMaxEventPayloadBytes,
			MaxBatchBytes:               DefaultMaxBatchBytes,
			MaxArtifactBytes:            DefaultMaxArtifactBytes,
			MaxTotalArtifactBytesPerRun: DefaultMaxTotalArtifactBytesPerRun,
		},
		Limits:        Limits{Timeout: DefaultTimeout, MaxDispatches: DefaultMaxDispatches},
		Restart:       Restart{MaxRestarts: DefaultMaxRestarts, InitialBackoff: DefaultInitialBackoff, MaxBackoff: DefaultMaxBackoff},
		TeardownGrace: DefaultTeardownGrace,
		Plugins:       []Plugin{},
		Lanes:         []Lane{},
	}
	content, diags := body.Content(runFileSchema)
	d.diags = append(d.diags, diags...)

	if a := content.Attributes["teardown_grace"]; a != nil {
		if v, ok := d.duration(a, nonNegativeDuration, "5s"); ok {
			rf.TeardownGrace = v
		}
	}
	if a := content.Attributes["trusted_keys"]; a != nil {
		rf.TrustedKeys = d.trustedKeys(a)
	}

	singles := map[string]*hclv2.Block{}
	var graphs []*hclv2.Block
	for _, blk := range content.Blocks {
		switch blk.Type {
		case "workspace", "storage", "limits", "restart", "preflight":
			if prev := singles[blk.Type]; prev != nil {
				d.errorAt(blk.DefRange, fmt.Sprintf("Duplicate %s block", blk.Type),
					fmt.Sprintf("Only one %s block is allowed; another is at %s. Merge them into one block.", blk.Type, prev.DefRange.String()))
				continue
			}
			singles[blk.Type] = blk
			body := blk.Body.(*hclsyntax.Body)
			switch blk.Type {
			case "workspace":
				d.workspace(body, &rf.Workspace)
			case "storage":
				d.storage(body, &rf.Storage)
			case "limits":
				d.limits(body, &rf.Limits)
			case "restart":
				d.restart(body, &rf.Restart)
			case "preflight":
				rf.Preflight = &Preflight{Timeout: DefaultPreflightTimeout}
				d.preflight(body, rf.Preflight)
			}
		case "plugin":
			rf.Plugins = append(rf.Plugins, d.plugin(blk))
		case "lane":
			rf.Lanes = append(rf.Lanes, d.lane(blk))
		case "graph":
			graphs = append(graphs, blk)
		}
	}
	d.applyPluginMemory(rf)
	d.uniqueNames("plugin", content.Blocks)
	d.uniqueNames("lane", content.Blocks)
	d.checkLaneAdapters(rf)
	d.checkProviders(rf)
	for _, l := range rf.Lanes {
		if l.Preflight != nil && rf.Preflight == nil {
			rf.Preflight = &Preflight{Timeout: DefaultPreflightTimeout}
		}
	}

	switch len(graphs) {
	case 0:
		d.errorAt(body.MissingItemRange(), "Missing graph block",
			"A run file needs exactly one graph \"dag\" { … } block holding the nodes to run. Add one, for example:\n\ngraph \"dag\" {\n  node \"hello\" {\n    lane   = \"writer\"\n    prompt = \"Say hello.\"\n  }\n}")
	default:
		for _, extra := range graphs[1:] {
			d.errorAt(extra.DefRange, "Duplicate graph block",
				fmt.Sprintf("A run file has exactly one graph block; another is at %s. Move these nodes into that block.", graphs[0].DefRange.String()))
		}
		rf.Graph = d.graph(graphs[0], rf)
	}

	least := 0
	for i := range rf.Graph.Nodes {
		least += staticLen(&rf.Graph.Nodes[i])
	}
	if rf.Graph.Nodes != nil && rf.Limits.MaxDispatches < least {
		// Without a limits block (the default applies), point at the graph
		// block's header, not at the whole file.
		rng := graphs[0].DefRange
		if blk := singles["limits"]; blk != nil {
			rng = blk.DefRange
			if a, ok := blk.Body.(*hclsyntax.Body).Attributes["max_dispatches"]; ok {
				rng = a.Expr.Range()
			}
		}
		d.warnAt(rng, "max_dispatches is less than the number of nodes",
			fmt.Sprintf("limits.max_dispatches is %d but the graph has %d nodes (counting each loop member and each static for_each item), each dispatched at least once, so the run will stop before every node has run. Raise max_dispatches to at least %d.", rf.Limits.MaxDispatches, least, least))
	}
	return rf
}

// uniqueNames diagnoses two blocks of one type with the same label.
func (d *decoder) uniqueNames(blockType string, blocks hclv2.Blocks) {
	seen := map[string]*hclv2.Block{}
	for _, blk := range blocks {
		if blk.Type != blockType || len(blk.Labels) == 0 {
			continue
		}
		name := blk.Labels[0]
		if prev := seen[name]; prev != nil {
			d.errorAt(blk.LabelRanges[0], fmt.Sprintf("Duplicate %s %q", blockType, name),
				fmt.Sprintf("A %s named %q is already declared at %s. Names of %ss must be unique; rename or remove one of them.", blockType, name, prev.DefRange.String(), blockType))
			continue
		}
		seen[name] = blk
	}
}

// checkName diagnoses a label that breaks the id grammar.
func (d *decoder) checkName(what, name string, rng hclv2.Range) bool {
	if validID(name) {
		return true
	}
	d.errorAt(rng, fmt.Sprintf("Invalid %s name %q", what, name), idGrammarDetail(what, name))
	return false
}

// resolvePath makes a path from the run file absolute.
func (d *decoder) resolvePath(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(d.dir, p)
}

// attrs decodes a block body against a schema of attribute names, none
// required (each caller checks its own requirements with a better fix).
func (d *decoder) attrs(body *hclsyntax.Body, names ...string) hclv2.Attributes {
	schema := &hclv2.BodySchema{}
	for _, n := range names {
		schema.Attributes = append(schema.Attributes, hclv2.AttributeSchema{Name: n})
	}
	content, diags := body.Content(schema)
	d.diags = append(d.diags, diags...)
	return content.Attributes
}

// required diagnoses a missing attribute.
func (d *decoder) required(attrs hclv2.Attributes, name string, blk *hclv2.Block, fix string) *hclv2.Attribute {
	if a := attrs[name]; a != nil {
		return a
	}
	detail := fmt.Sprintf("The %s block must set %s. Add %s", blockName(blk), name, fix)
	if !strings.HasSuffix(detail, ".") {
		detail += "."
	}
	d.errorAt(blk.DefRange, fmt.Sprintf("Missing %s in %s", name, blockName(blk)), detail)
	return nil
}

// blockName renders a block header as written, e.g. `plugin "claude"`.
func blockName(blk *hclv2.Block) string {
	s := blk.Type
	for _, l := range blk.Labels {
		s += fmt.Sprintf(" %q", l)
	}
	return s
}

func (d *decoder) storage(body *hclsyntax.Body, st *Storage) {
	attrs := d.attrs(body, "directory", "url", "namespace", "max_event_payload_bytes", "max_batch_bytes",
		"max_artifact_bytes", "max_total_artifact_bytes_per_run", "known_secrets_from_env", "max_log_bytes", "max_stream_bytes")
	if a := attrs["directory"]; a != nil {
		if s, ok := d.nonEmptyStr(a, `a directory, for example directory = ".obversa"`); ok {
			st.Directory = d.resolvePath(s)
		}
	}
	if a := attrs["url"]; a != nil {
		if s, ok := d.nonEmptyStr(a, `a PostgreSQL URL, for example url = "postgres://obversa@db.internal/obversa"`); ok {
			if summary, detail := checkStorageURL(s); summary != "" {
				d.errorAt(a.Expr.Range(), summary, detail)
			} else {
				st.URL = s
			}
		}
	}
	if a := attrs["namespace"]; a != nil {
		if s, ok := d.str(a, `a name, for example namespace = "default"`); ok && d.checkName("namespace", s, a.Expr.Range()) {
			st.Namespace = s
		}
	}
	sizes := []struct {
		name    string
		dst     *int64
		example string
	}{
		{"max_event_payload_bytes", &st.MaxEventPayloadBytes, "65536"},
		{"max_batch_bytes", &st.MaxBatchBytes, "4194304"},
		{"max_artifact_bytes", &st.MaxArtifactBytes, "1048576"},
		{"max_total_artifact_bytes_per_run", &st.MaxTotalArtifactBytesPerRun, "16777216"},
		{"max_log_bytes", &st.MaxLogBytes, "8388608"},
		{"max_stream_bytes", &st.MaxStreamBytes, "67108864"},
	}
	for _, s := range sizes {
		if a := attrs[s.name]; a != nil {
			if v, ok := d.integer(a, 1, s.example); ok {
				*s.dst = v
			}
		}
	}
	if st.MaxBatchBytes < st.MaxEventPayloadBytes {
		rng := body.SrcRange
		if a := attrs["max_batch_bytes"]; a != nil {
			rng = a.Expr.Range()
		} else if a := attrs["max_event_payload_bytes"]; a != nil {
			rng = a.Expr.Range()
		}
		d.errorAt(rng, "max_batch_bytes is smaller than max_event_payload_bytes",
			fmt.Sprintf("A batch holds at least one event, so max_batch_bytes (%d) must be at least max_event_payload_bytes (%d). Raise max_batch_bytes or lower max_event_payload_bytes.", st.MaxBatchBytes, st.MaxEventPayloadBytes))
	}
	if a := attrs["known_secrets_from_env"]; a != nil {
		names, ranges, ok := d.strList(a, `a list of environment variable names, for example known_secrets_from_env = ["ANTHROPIC_API_KEY"]`)
		if ok {
			for i, n := range names {
				if !envNamePattern.MatchString(n) {
					d.errorAt(ranges[i], fmt.Sprintf("Invalid environment variable name %q", n),
						"Names in known_secrets_from_env are environment variable names: letters, digits and '_', not starting with a digit, for example \"ANTHROPIC_API_KEY\".")
					ok = false
				}
			}
			if ok {
				st.KnownSecretsFromEnv = names
			}
		}
	}
}

func (d *decoder) limits(body *hclsyntax.Body, l *Limits) {
	attrs := d.attrs(body, "timeout", "max_dispatches", "max_input_tokens", "max_output_tokens", "stop_on_unmeasured", "plugin_memory")
	if a := attrs["max_input_tokens"]; a != nil {
		l.MaxInputTokens, _ = d.integer(a, 1, "100000")
	}
	if a := attrs["max_output_tokens"]; a != nil {
		l.MaxOutputTokens, _ = d.integer(a, 1, "20000")
	}
	if a := attrs["stop_on_unmeasured"]; a != nil {
		l.StopOnUnmeasured, _ = d.boolean(a)
	}
	if a := attrs["timeout"]; a != nil {
		if v, ok := d.duration(a, positiveDuration, "30m"); ok {
			l.Timeout = v
		}
	}
	if a := attrs["max_dispatches"]; a != nil {
		if v, ok := d.intAttr(a, 1, "200"); ok {
			l.MaxDispatches = v
		}
	}
	if a := attrs["plugin_memory"]; a != nil {
		if v, ok := d.size(a, MinPluginMemory, `plugin_memory = "2GiB"`); ok {
			l.PluginMemory = v
		}
	}
}

func (d *decoder) restart(body *hclsyntax.Body, r *Restart) {
	attrs := d.attrs(body, "max_restarts", "initial_backoff", "max_backoff")
	if a := attrs["max_restarts"]; a != nil {
		if v, ok := d.intAttr(a, 0, "3"); ok {
			r.MaxRestarts = v
		}
	}
	if a := attrs["initial_backoff"]; a != nil {
		if v, ok := d.duration(a, nonNegativeDuration, "1s"); ok {
			r.InitialBackoff = v
		}
	}
	if a := attrs["max_backoff"]; a != nil {
		if v, ok := d.duration(a, nonNegativeDuration, "30s"); ok {
			r.MaxBackoff = v
		}
	}
	if r.MaxBackoff < r.InitialBackoff {
		rng := body.SrcRange
		if a := attrs["max_backoff"]; a != nil {
			rng = a.Expr.Range()
		} else if a := attrs["initial_backoff"]; a != nil {
			rng = a.Expr.Range()
		}
		d.errorAt(rng, "max_backoff is shorter than initial_backoff",
			fmt.Sprintf("The restart backoff grows from initial_backoff (%s) up to max_backoff (%s), so max_backoff must be at least initial_backoff. Raise max_backoff or lower initial_backoff.", r.InitialBackoff, r.MaxBackoff))
	}
}

func (d *decoder) preflight(body *hclsyntax.Body, p *Preflight) {
	attrs := d.attrs(body, "timeout")
	if a := attrs["timeout"]; a != nil {
		if v, ok := d.duration(a, positiveDuration, "20s"); ok {
			p.Timeout = v
		}
	}
}

// trustedKeys decodes a trusted_keys list: non-empty strings.
func (d *decoder) trustedKeys(a *hclv2.Attribute) []string {
	keys, ranges, ok := d.strList(a, `a list of minisign public keys or key file paths, for example trusted_keys = ["keys/release.pub"]`)
	if !ok {
		return nil
	}
	for i, k := range keys {
		if k == "" {
			d.errorAt(ranges[i], "Empty trusted key", "Each entry of trusted_keys is a minisign public key (its base64 line) or the path of a .pub file; remove the empty string.")
			return nil
		}
	}
	return keys
}

// rangeOf converts an HCL range to a Range.
func rangeOf(r hclv2.Range) Range {
	return Range{Filename: r.Filename, Line: r.Start.Line, Column: r.Start.Column}
}
