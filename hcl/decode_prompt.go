package hcl

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"unicode/utf8"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/obversa/obversa/internal/regfile"
)

// prompt decodes a prompt attribute. set is false when the prompt is
// absent (null) or invalid.
func (d *decoder) prompt(a *hclv2.Attribute) (src string, refs []resultRef, set bool) {
	expr := a.Expr.(hclsyntax.Expression)
	vars := expr.Variables()
	if len(vars) == 0 {
		s, ok := d.str(a, `a string or template, for example prompt = "Summarise ${input.results.draft}"`)
		return escapeLiteral(s), nil, ok
	}
	refs, ok := d.templateRefs(vars, "prompt")
	if !ok || !d.checkTemplate(expr) {
		return "", refs, false
	}
	return d.storedTemplate(expr, refs)
}

// promptFile reads a prompt_file: its content is template source as is.
func (d *decoder) promptFile(a *hclv2.Attribute) (path, src string, refs []resultRef, set bool) {
	p, ok := d.nonEmptyStr(a, `a path relative to the run file, for example prompt_file = "prompts/draft.md"`)
	if !ok {
		return "", "", nil, false
	}
	path, ok = d.resolvePath(p, a.Expr.Range(), "prompt_file")
	if !ok {
		return "", "", nil, false
	}
	display := p
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		display = path
	case !filepath.IsAbs(p):
		display = filepath.Join(filepath.Dir(d.filename), p)
	}
	b, err := regfile.Read(path, MaxPromptFileBytes)
	if diag, big := fileTooLarge("Prompt file", display, path, err, MaxPromptFileBytes,
		"shorten the prompt: it is stored in the run's definition event; give the engine large material through the workspace instead"); big {
		diag.Subject = a.Expr.Range().Ptr()
		d.diags = append(d.diags, diag)
		return "", "", nil, false
	}
	if err != nil {
		d.errorAt(a.Expr.Range(), "Cannot read prompt file",
			fmt.Sprintf("Reading %s failed: %v. The path is relative to the run file's directory; check it exists and is readable.", display, unwrapPathError(err)))
		return "", "", nil, false
	}
	if !utf8.Valid(b) {
		d.errorAt(a.Expr.Range(), "Prompt file is not UTF-8 text",
			fmt.Sprintf("%s must be UTF-8 text; convert it or choose another file.", display))
		return "", "", nil, false
	}
	expr, diags := parseTemplate(b, display)
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() {
		return "", "", nil, false
	}
	vars := expr.Variables()
	refs, ok = d.templateRefs(vars, "prompt")
	if !ok || !d.checkTemplate(expr) {
		return "", "", refs, false
	}
	return path, string(b), refs, true
}

// MaxPromptFileBytes is the largest prompt_file accepted, in bytes. The
// prompt is stored in the run's definition event, so it must stay small.
const MaxPromptFileBytes = 1 << 20

// unwrapPathError drops the path from an *fs.PathError, which the
// diagnostic already names.
func unwrapPathError(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}
