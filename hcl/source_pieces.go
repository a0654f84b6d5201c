package hcl

import (
	"bytes"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// pieceBodyBytes is the size (bytes) from which a top-level block's body
// is parsed a piece at a time (parsePieces): a graph of a few thousand
// nodes. Smaller files take hclsyntax.ParseConfig's one pass.
const pieceBodyBytes = 256 << 10

// pieceBytes is about how much of such a body (bytes) one piece holds.
const pieceBytes = 64 << 10

// parsePieces parses src as hclsyntax.ParseConfig does, with each body of
// regions (scanSource) parsed in pieces of about piece bytes of whole
// items, so that the lexer's token slice (every token of its input) and
// the parser's work stay the size of a piece. The rest of the file is
// parsed with those bodies blanked out: the same bytes, the body's
// characters but its line ends made one block comment, so every position
// after it is what it was. It returns false — the caller then parses the
// whole file at once, which reports whatever is wrong — when any part
// has a diagnostic, a body's pieces set one argument twice, or a region
// is not the body of a top-level block; what it returns otherwise equals
// ParseConfig's result (FuzzParsePieces).
func parsePieces(src []byte, filename string, regions []bodyRegion, piece int) (*hclv2.File, bool) {
	if len(regions) == 0 {
		return nil, false
	}
	skeleton := bytes.Clone(src)
	for _, r := range regions {
		if !blankOut(skeleton[r.start.Byte:r.end]) {
			return nil, false
		}
	}
	file, diags := hclsyntax.ParseConfig(skeleton, filename, hclv2.InitialPos)
	if len(diags) > 0 {
		return nil, false
	}
	root, ok := file.Body.(*hclsyntax.Body)
	if !ok {
		return nil, false
	}
	for _, r := range regions {
		block := blockAt(root, r.open)
		if block == nil || len(block.Body.Attributes) > 0 || len(block.Body.Blocks) > 0 {
			return nil, false
		}
		if !parseBody(block.Body, src, filename, r, piece) {
			return nil, false
		}
	}
	file.Bytes = src
	return file, true
}

// blankOut turns b, whole lines, into one block comment of the same
// length with the same line ends (every other byte a space), so that the
// lexer's positions after it do not change. False when b has no two
// characters in a row on a line at its start and at its end to hold /*
// and */.
func blankOut(b []byte) bool {
	lineEnd := func(c byte) bool { return c == '\n' || c == '\r' }
	i := 0
	for i+1 < len(b) && (lineEnd(b[i]) || lineEnd(b[i+1])) {
		i++
	}
	j := len(b) - 1
	for j-1 > i+1 && (lineEnd(b[j]) || lineEnd(b[j-1])) {
		j--
	}
	if j-1 <= i+1 || lineEnd(b[j]) || lineEnd(b[j-1]) {
		return false
	}
	for k, c := range b {
		if !lineEnd(c) {
			b[k] = ' '
		}
	}
	b[i], b[i+1], b[j-1], b[j] = '/', '*', '*', '/'
	return true
}

// blockAt returns the top-level block of root whose opening brace is at
// byte offset open, or nil.
func blockAt(root *hclsyntax.Body, open int) *hclsyntax.Block {
	for _, b := range root.Blocks {
		if b.OpenBraceRange.Start.Byte == open {
			return b
		}
	}
	return nil
}

// parseBody parses the items of region r of src a piece at a time, each
// piece whole lines from one of r's cuts to another, and adds them to
// body. False on a diagnostic or an argument set twice.
func parseBody(body *hclsyntax.Body, src []byte, filename string, r bodyRegion, piece int) bool {
	from := r.start
	for i, cut := range append(r.cuts, hclv2.Pos{Byte: r.end}) {
		if i < len(r.cuts) && cut.Byte-from.Byte < piece {
			continue
		}
		if bytes.HasPrefix(src[from.Byte:], utf8BOM) {
			// The lexer drops a byte order mark at the start of its input
			// only.
			return false
		}
		file, diags := hclsyntax.ParseConfig(src[from.Byte:cut.Byte], filename, from)
		if len(diags) > 0 {
			return false
		}
		part := file.Body.(*hclsyntax.Body)
		for name, attr := range part.Attributes {
			if _, twice := body.Attributes[name]; twice {
				return false
			}
			body.Attributes[name] = attr
		}
		body.Blocks = append(body.Blocks, part.Blocks...)
		from = cut
	}
	return true
}
