package hcl

import (
	"fmt"
	"io"
	"os"

	hclv2 "github.com/hashicorp/hcl/v2"
)

// WriteDiagnostics writes diagnostics for a person to read: a first line
// "file:line:col: severity: summary", then the source snippet and the detail,
// wrapped at width columns (0 disables wrapping), without colour.
//
// The snippet text comes from sources (file name → content, as named in
// the diagnostics' ranges) when it holds the file, and otherwise from
// reading the named file again; a file that cannot be read is shown
// without a snippet. The error is the writer's.
func WriteDiagnostics(w io.Writer, diags hclv2.Diagnostics, sources map[string][]byte, width uint) error {
	files := map[string]*hclv2.File{}
	for _, dg := range diags {
		for _, r := range []*hclv2.Range{dg.Subject, dg.Context} {
			if r == nil || r.Filename == "" {
				continue
			}
			if _, done := files[r.Filename]; done {
				continue
			}
			src, ok := sources[r.Filename]
			if !ok {
				b, err := os.ReadFile(r.Filename)
				if err != nil {
					continue
				}
				src = b
			}
			files[r.Filename] = &hclv2.File{Bytes: src}
		}
	}
	tw := hclv2.NewDiagnosticTextWriter(w, files, width, false)
	for _, dg := range diags {
		// A file:line:col first line, as compilers print it, so editors and
		// people can jump to the place; HCL's block with the snippet follows.
		if r := dg.Subject; r != nil {
			sev := "error"
			if dg.Severity == hclv2.DiagWarning {
				sev = "warning"
			}
			if _, err := fmt.Fprintf(w, "%s:%d:%d: %s: %s\n", r.Filename, r.Start.Line, r.Start.Column, sev, dg.Summary); err != nil {
				return err
			}
		}
		if err := tw.WriteDiagnostic(dg); err != nil {
			return err
		}
	}
	return nil
}
