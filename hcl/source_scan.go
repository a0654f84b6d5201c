package hcl

import (
	"bytes"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// lexWindowBytes is about how much source (bytes) the lexer takes at once
// when a run file is scanned (scanSource): HCL's lexer appends every
// token of its input to one slice (96 bytes a token, about 30 MB for a
// 10 000-node graph, grown in copies that come to five times that), so a
// whole file lexed at once made the watchdog's peak resident set
// (docs/decisions.md, "A large run file is lexed and parsed in pieces").
const lexWindowBytes = 64 << 10

// utf8BOM is the byte order mark the lexer drops at the start of its input.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// lexWindows lexes src as hclsyntax.LexConfig does and calls fn with its
// tokens in order, a window of about window bytes at a time. A window ends
// right after a newline token at which nothing the lexer keeps across
// tokens is open — no quote, heredoc or template sequence, so its state
// is the one it starts in — which is where lexing the rest alone gives
// the tokens a lex of the whole gives; a window that does not end so is
// lexed again twice as long. Each window's tokens end before its
// TokenEOF, except the last window's.
func lexWindows(src []byte, filename string, window int, fn func(hclsyntax.Tokens)) {
	pos := hclv2.InitialPos
	for size := window; ; {
		end := pos.Byte + size
		if end >= len(src) {
			toks, _ := hclsyntax.LexConfig(src[pos.Byte:], filename, pos)
			fn(toks)
			return
		}
		cut := bytes.LastIndexByte(src[pos.Byte:end], '\n')
		if cut < 0 || bytes.HasPrefix(src[pos.Byte+cut+1:], utf8BOM) {
			size *= 2
			continue
		}
		toks, _ := hclsyntax.LexConfig(src[pos.Byte:pos.Byte+cut+1], filename, pos)
		next, ok := cleanEnd(toks, pos.Byte+cut+1)
		if !ok {
			size *= 2
			continue
		}
		fn(toks[:len(toks)-1])
		pos, size = next, window
	}
}

// cleanEnd reports whether toks, the tokens of a window ending at byte
// end, end with a newline token at end with no quote, heredoc or template
// sequence open, and returns the position after it.
func cleanEnd(toks hclsyntax.Tokens, end int) (hclv2.Pos, bool) {
	if len(toks) < 2 {
		return hclv2.Pos{}, false
	}
	last := toks[len(toks)-2]
	if last.Type != hclsyntax.TokenNewline || last.Range.End.Byte != end {
		return hclv2.Pos{}, false
	}
	open := 0
	for _, t := range toks {
		switch t.Type {
		case hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc, hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
			open++
		case hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc, hclsyntax.TokenTemplateSeqEnd:
			open--
		}
	}
	return last.Range.End, open == 0
}

// bodyRegion is the inside of a top-level block's body that scanSource
// found worth parsing in pieces: whole lines from start (the line after
// the one with the opening brace) up to end (the byte offset of the line
// holding the closing brace, which holds nothing else but blanks before
// it), and the starts of the lines between the body's items.
type bodyRegion struct {
	open  int // byte offset of the opening brace
	start hclv2.Pos
	end   int
	cuts  []hclv2.Pos
}

// sourceScan follows the tokens of a run file (scanSource) and finds its
// large top-level block bodies.
type sourceScan struct {
	nest  nesting
	diags hclv2.Diagnostics
	// itemToks counts the tokens of the current top-level item; isBlock
	// says whether it can be a block (an identifier not followed by =).
	itemToks int
	isBlock  bool
	prev     hclsyntax.TokenType
	cur      *bodyRegion
	lastNL   int // the end of the last newline inside cur
	minBody  int
	regions  []bodyRegion
}

// scanSource lexes src a window at a time (lexWindows) and returns the
// diagnostics of checkLineEnds and the nesting check — the same, for the
// same first token, as for the whole file's tokens — and the bodies of
// top-level blocks whose items span at least minBody bytes.
func scanSource(src []byte, filename string, window, minBody int) ([]bodyRegion, hclv2.Diagnostics) {
	s := &sourceScan{minBody: minBody}
	lexWindows(src, filename, window, func(toks hclsyntax.Tokens) {
		if s.diags.HasErrors() {
			return
		}
		if d := checkLineEnds(toks, filename); d.HasErrors() {
			s.diags = d
			return
		}
		for _, t := range toks {
			depth := s.nest.depth
			if d := s.nest.next(t); d.HasErrors() {
				s.diags = d
				return
			}
			s.follow(t, depth)
		}
	})
	return s.regions, s.diags
}

// follow notes token t, which came at nesting depth before it.
func (s *sourceScan) follow(t hclsyntax.Token, depth int) {
	defer func() { s.prev = t.Type }()
	switch {
	case depth == 0 && t.Type == hclsyntax.TokenNewline:
		s.itemToks = 0
	case depth == 0 && t.Type == hclsyntax.TokenComment:
		if bytes.HasSuffix(t.Bytes, []byte("\n")) {
			s.itemToks = 0
		}
	case depth == 0 && t.Type == hclsyntax.TokenOBrace:
		if s.isBlock && s.itemToks > 0 {
			s.cur = &bodyRegion{open: t.Range.Start.Byte, start: hclv2.Pos{Byte: -1}}
		}
		s.itemToks++
	case depth == 0:
		s.itemToks++
		switch s.itemToks {
		case 1:
			s.isBlock = t.Type == hclsyntax.TokenIdent
		case 2:
			s.isBlock = s.isBlock && t.Type != hclsyntax.TokenEqual
		}
	case depth == 1 && s.cur != nil:
		s.inBody(t)
	}
}

// inBody notes token t, at depth 1 inside the body of the block s.cur.
func (s *sourceScan) inBody(t hclsyntax.Token) {
	r := s.cur
	switch {
	case r.start.Byte < 0:
		// The token after the opening brace: a body in pieces starts on
		// the next line.
		if t.Type != hclsyntax.TokenNewline {
			s.cur = nil
			return
		}
		r.start, s.lastNL = t.Range.End, t.Range.End.Byte
	case t.Type == hclsyntax.TokenNewline:
		r.cuts = append(r.cuts, t.Range.End)
		s.lastNL = t.Range.End.Byte
	case t.Type == hclsyntax.TokenCBrace:
		s.cur = nil
		if s.prev != hclsyntax.TokenNewline || len(r.cuts) == 0 || r.cuts[len(r.cuts)-1].Byte != s.lastNL {
			return
		}
		r.end = s.lastNL
		r.cuts = r.cuts[:len(r.cuts)-1]
		if r.end-r.start.Byte >= s.minBody {
			s.regions = append(s.regions, *r)
		}
	}
}
