package hcl

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/obversa/obversa/internal/regfile"
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
// be read, or an empty path, is reported as an error diagnostic without a
// source range.
func DecodeFile(path string) (*RunFile, hclv2.Diagnostics) {
	if path == "" {
		return nil, hclv2.Diagnostics{{
			Severity: hclv2.DiagError,
			Summary:  "Cannot read run file",
			Detail:   `The run file's path is empty (""). Name the run file, for example run.hcl or ./examples/quickstart/run.hcl.`,
		}}
	}
	src, err := regfile.Read(path, MaxRunFileBytes)
	if err != nil {
		if d, ok := fileTooLarge("Run file", path, path, err, MaxRunFileBytes,
			"move long prompts into files a node names with prompt_file, or split the graph into several run files"); ok {
			return nil, hclv2.Diagnostics{d}
		}
		return nil, hclv2.Diagnostics{{
			Severity: hclv2.DiagError,
			Summary:  "Cannot read run file",
			Detail: fmt.Sprintf("Reading %s failed: %v. Check the path and its permissions; a run file is a regular file of at most %d bytes.",
				path, unwrapPathError(err), MaxRunFileBytes),
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
	if !utf8.ValidString(dir) {
		// Paths resolved against it, and the run file's own name, are
		// recorded as JSON text, which holds only UTF-8: a byte that is
		// not would be recorded as U+FFFD, a path that does not exist.
		return nil, hclv2.Diagnostics{{
			Severity: hclv2.DiagError,
			Summary:  "Run file's directory is not UTF-8",
			Detail:   fmt.Sprintf("The directory of %s, %q, is not UTF-8 text. The paths a run records (its run file, workspace root, storage directory, plugins) are JSON text, which holds only UTF-8; rename the directory or move the run file.", filename, dir),
		}}
	}
	file, diags := parseConfig(src, filename)
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
	rf := d.defaultRunFile()
	content, diags := body.Content(runFileSchema)
	d.diags = append(d.diags, diags...)

	if a := content.Attributes["teardown_grace"]; a != nil {
		if v, ok := d.duration(a, nonNegativeDuration, "5s"); ok {
			rf.TeardownGrace = v
		}
	}
	if a := content.Attributes["trusted_keys"]; a != nil {
		rf.TrustedKeys, rf.TrustedKeyRanges = d.trustedKeys(a)
	}

	singles, graphs := d.topBlocks(content.Blocks, rf)
	d.applyPluginMemory(rf)
	d.uniqueNames("plugin", content.Blocks)
	d.uniqueNames("lane", content.Blocks)
	d.checkLaneAdapters(rf)
	d.checkProviders(rf)
	d.checkStorageHoldsRoot(rf)
	for _, l := range rf.Lanes {
		if l.Preflight != nil && rf.Preflight == nil {
			rf.Preflight = &Preflight{Timeout: DefaultPreflightTimeout}
		}
	}
	d.oneGraph(body, graphs, rf)
	if rf.Graph.Nodes != nil {
		d.checkMaxDispatches(rf, graphs[0], singles["limits"])
	}
	return rf
}

// defaultRunFile is a run file with every default of docs/run-file.md
// applied and nothing declared.
func (d *decoder) defaultRunFile() *RunFile {
	return &RunFile{
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
}

// topBlocks decodes the top-level blocks into rf, except graph blocks,
// which it returns for after the plugins and lanes are known. singles are
// the blocks allowed once (workspace, storage, limits, restart,
// preflight) by type, the first of each; a later one is diagnosed.
func (d *decoder) topBlocks(blocks hclv2.Blocks, rf *RunFile) (singles map[string]*hclv2.Block, graphs []*hclv2.Block) {
	singles = map[string]*hclv2.Block{}
	for _, blk := range blocks {
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
	return singles, graphs
}

// oneGraph decodes the run file's graph block into rf.Graph: exactly one
// is allowed, a missing or a further one is diagnosed.
func (d *decoder) oneGraph(body *hclsyntax.Body, graphs []*hclv2.Block, rf *RunFile) {
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
}

// checkMaxDispatches warns when limits.max_dispatches is below the number
// of dispatches the graph needs at least (every node once, each loop
// member and static for_each item counted), since the run would then stop
// before every node ran. graph is the graph block, limits the limits block
// or nil.
func (d *decoder) checkMaxDispatches(rf *RunFile, graph, limits *hclv2.Block) {
	least := 0
	for i := range rf.Graph.Nodes {
		least += staticLen(&rf.Graph.Nodes[i])
	}
	if rf.Limits.MaxDispatches >= least {
		return
	}
	// Without a limits block (the default applies), point at the graph
	// block's header, not at the whole file.
	rng := graph.DefRange
	if limits != nil {
		rng = limits.DefRange
		if a, ok := limits.Body.(*hclsyntax.Body).Attributes["max_dispatches"]; ok {
			rng = a.Expr.Range()
		}
	}
	d.warnAt(rng, "max_dispatches is less than the number of nodes",
		fmt.Sprintf("limits.max_dispatches is %d but the graph has %d nodes (counting each loop member and each static for_each item), each dispatched at least once, so the run will stop before every node has run. Raise max_dispatches to at least %d.", rf.Limits.MaxDispatches, least, least))
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

// rangeOf converts an HCL range to a Range.
func rangeOf(r hclv2.Range) Range {
	return Range{Filename: r.Filename, Line: r.Start.Line, Column: r.Start.Column}
}
