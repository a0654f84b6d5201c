package hcl

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"sync"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// MinPluginMemory is the smallest memory limit a plugin may be given
// (bytes): below it a plugin runtime cannot start.
const MinPluginMemory = 16 << 20

// Confine is a plugin's `confine` block with its defaults applied
// (docs/confinement.md). Paths are absolute: "~" is the home directory of
// the user running obversa and relative paths are resolved against the
// run file's directory.
type Confine struct {
	// Write lists paths the plugin may write besides the defaults (the
	// workspace root, the run's scratch directory, the plugin's state
	// directory).
	Write []string `json:"write,omitempty"`
	// DenyRead lists paths the plugin may not read.
	DenyRead []string `json:"deny_read,omitempty"`
	// Network allows TCP connect and bind. Default: true for engines,
	// false for every other type.
	Network bool `json:"network"`
	// MemoryBytes limits the plugin and its descendants; 0 = no limit.
	// Default: limits.plugin_memory.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// Required refuses the run when the kernel cannot enforce all of it.
	Required bool `json:"required,omitempty"`
}

// confineSchema is the body of a confine block.
var confineSchema = &hclv2.BodySchema{Attributes: []hclv2.AttributeSchema{
	{Name: "write"}, {Name: "deny_read"}, {Name: "network"}, {Name: "memory"}, {Name: "required"},
}}

// confine decodes a plugin's confine blocks onto the defaults of its
// type; at most one block is allowed.
func (d *decoder) confine(p *Plugin, blocks []*hclv2.Block) {
	p.Confine.Network = p.Type == PluginTypeEngine
	memorySet := false
	defer func() { d.memorySet = append(d.memorySet, memorySet) }()
	for i, blk := range blocks {
		if i > 0 {
			d.errorAt(blk.DefRange, "Duplicate confine block",
				fmt.Sprintf("A plugin has at most one confine block; another is at %s. Merge them.", blocks[0].DefRange.String()))
			continue
		}
		content, diags := blk.Body.Content(confineSchema)
		d.diags = append(d.diags, diags...)
		attrs := content.Attributes
		if a := attrs["write"]; a != nil {
			p.Confine.Write = d.confinePaths(a, `write = ["/tmp/cache"]`)
		}
		if a := attrs["deny_read"]; a != nil {
			p.Confine.DenyRead = d.confinePaths(a, `deny_read = ["~/.ssh", "~/.aws"]`)
		}
		if a := attrs["network"]; a != nil {
			if b, ok := d.boolean(a); ok {
				p.Confine.Network = b
			}
		}
		if a := attrs["memory"]; a != nil {
			if n, ok := d.size(a, MinPluginMemory, `memory = "1GiB"`); ok {
				p.Confine.MemoryBytes = n
				memorySet = true
			}
		}
		if a := attrs["required"]; a != nil {
			if b, ok := d.boolean(a); ok {
				p.Confine.Required = b
			}
		}
	}
}

// confinePaths decodes a list of paths: "~" or "~/…" is the home
// directory, a relative path is relative to the run file.
func (d *decoder) confinePaths(a *hclv2.Attribute, example string) []string {
	list, ranges, ok := d.strList(a, "a list of paths, for example "+example)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(list))
	for i, s := range list {
		if s == "" {
			d.errorAt(ranges[i], fmt.Sprintf("Empty path in %s", a.Name), "Remove the empty string, or name a path, for example "+example+".")
			continue
		}
		if abs, ok := d.resolvePath(s, ranges[i], "confine."+a.Name); ok {
			out = append(out, abs)
		}
	}
	return out
}

// sizePattern is a size with a unit: "512MiB", "1.5 GiB", "100MB".
var sizePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*$`) })

// sizeUnits are the units size accepts, in bytes.
var sizeUnits = map[string]float64{
	"": 1, "B": 1,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
	"KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
}

// ParseSize parses a size: a whole number of bytes, or a number with one
// of the units B, KiB, MiB, GiB, TiB (powers of 1024) or KB, MB, GB, TB
// (powers of 1000). The result is rounded down to a whole byte.
func ParseSize(s string) (int64, error) {
	m := sizePattern().FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q is not a size: write a number and a unit, for example \"512MiB\" or \"2GiB\"", s)
	}
	unit, ok := sizeUnits[m[2]]
	if !ok {
		return 0, fmt.Errorf("unknown unit %q in %q: use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB", m[2], s)
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size: %v", s, err)
	}
	n := f * unit
	if n >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(n), nil
}

// size decodes a memory size: a whole number of bytes or a string with a
// unit (ParseSize), from min to math.MaxInt64 bytes. A number is checked
// against that range before it is checked to be whole and exact, however
// it is written (1e20 * 1 is too large, not "not whole").
func (d *decoder) size(a *hclv2.Attribute, min int64, example string) (int64, bool) {
	v, ok := d.evaluate(a)
	if !ok {
		return 0, false
	}
	var f *big.Float
	switch {
	case v.Type() == cty.Number:
		f = v.AsBigFloat()
	case v.Type() == cty.String:
		n, err := ParseSize(v.AsString())
		if err != nil {
			d.errorAt(a.Expr.Range(), fmt.Sprintf("Invalid %s", a.Name), err.Error()+".")
			return 0, false
		}
		f = new(big.Float).SetInt64(n)
	default:
		d.typeError(a, v.Type(), "a size, for example "+example)
		return 0, false
	}
	switch {
	case f.Cmp(new(big.Float).SetInt64(math.MaxInt64)) > 0:
		d.errorAt(a.Expr.Range(), fmt.Sprintf("%s is too large", a.Name),
			fmt.Sprintf("%s must be from %d MiB (%d bytes) to %d bytes; got %s bytes. Write, for example, %s.", a.Name, min>>20, min, int64(math.MaxInt64), cutNumber(numberText(f)), example))
		return 0, false
	case f.Cmp(new(big.Float).SetInt64(min)) < 0:
		d.errorAt(a.Expr.Range(), fmt.Sprintf("%s is too small", a.Name),
			fmt.Sprintf("%s must be at least %d MiB (%d bytes): below that a plugin cannot start; got %s bytes. Write, for example, %s.", a.Name, min>>20, min, cutNumber(numberText(f)), example))
		return 0, false
	}
	if !d.exactNumbers(a.Expr, a.Name, v) {
		return 0, false
	}
	n, ok := wholeNumber(f)
	if !ok {
		d.errorAt(a.Expr.Range(), fmt.Sprintf("Invalid %s", a.Name), fmt.Sprintf("A size in bytes must be a whole number; or write it with a unit, for example %s.", example))
		return 0, false
	}
	return n, true
}

// pluginBodySchema is the body of a plugin block.
var pluginBodySchema = &hclv2.BodySchema{
	Attributes: []hclv2.AttributeSchema{
		{Name: "type"}, {Name: "path"}, {Name: "sha256"}, {Name: "args"}, {Name: "env"},
		{Name: "pass_env"}, {Name: "config"}, {Name: "trusted_keys"}, {Name: "start_timeout"},
	},
	Blocks: []hclv2.BlockHeaderSchema{{Type: "confine"}},
}

// pluginContent returns a plugin body's attributes and confine blocks.
func (d *decoder) pluginContent(body *hclsyntax.Body) (hclv2.Attributes, []*hclv2.Block) {
	content, diags := body.Content(pluginBodySchema)
	d.diags = append(d.diags, diags...)
	return content.Attributes, content.Blocks
}

// applyPluginMemory gives every plugin whose confine block sets no memory
// the run-wide limits.plugin_memory.
func (d *decoder) applyPluginMemory(rf *RunFile) {
	for i := range rf.Plugins {
		if i < len(d.memorySet) && !d.memorySet[i] {
			rf.Plugins[i].Confine.MemoryBytes = rf.Limits.PluginMemory
		}
	}
}
