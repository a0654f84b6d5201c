package plan

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/gowebpki/jcs"

	"github.com/obversa/obversa/internal/canonjson"
)

// canonicalJSON rewrites JSON text as encoding/json writes it (no
// whitespace, valid UTF-8, integers as digits) into its RFC 8785 canonical
// form in one pass over the bytes: object members sorted by the UTF-16
// code units of their names, strings with only `"`, `\` and control
// characters escaped, numbers as ECMAScript writes them. ok is false for
// anything it does not take — whitespace, an escape it does not know, a
// lone surrogate, a duplicate name, a number out of range, nesting past
// canonMaxDepth — and the caller hands the text to jcs.Transform, which
// decides (FuzzCanonicalJSON holds the two to the same answer). The
// digests of a run's definition and plan are taken three times before its
// first dispatch (recorded, then checked by the watchdog's and the
// worker's folds); jcs.Transform, which builds a tree of the whole text
// first, took 23 ms of a 1 000-node definition's 39 ms digest
// (docs/architecture.md#performance-budget).
func canonicalJSON(in []byte) (out []byte, ok bool) {
	c := canon{in: in, out: make([]byte, 0, len(in))}
	if !c.value() || c.i != len(in) {
		return nil, false
	}
	return c.out, true
}

// canonMaxDepth bounds the nesting canonicalJSON follows; deeper text is
// left to jcs.Transform.
const canonMaxDepth = 512

// canon is one canonicalJSON pass: in is read at i, out written.
type canon struct {
	in    []byte
	i     int
	out   []byte
	depth int
	// members holds the members of the objects being read, innermost
	// last; scratch holds an object's values while it is written again.
	members []member
	scratch []byte
}

// member is one object member: its name and where its canonical value
// lies in out.
type member struct {
	name       []byte
	ascii      bool
	start, end int
}

func (c *canon) value() bool {
	if c.i >= len(c.in) {
		return false
	}
	switch b := c.in[c.i]; {
	case b == '{':
		return c.object()
	case b == '[':
		return c.array()
	case b == '"':
		s, _, ok := c.str()
		if ok {
			c.out = canonjson.AppendString(c.out, s)
		}
		return ok
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	case b == '-' || b >= '0' && b <= '9':
		return c.number()
	}
	return false
}

// ended reports whether the value just read is followed by the end of the
// text or a structural character.
func (c *canon) ended() bool {
	return c.i == len(c.in) || c.in[c.i] == ',' || c.in[c.i] == ']' || c.in[c.i] == '}'
}

func (c *canon) literal(lit string) bool {
	if !strings.HasPrefix(string(c.in[c.i:min(len(c.in), c.i+len(lit))]), lit) {
		return false
	}
	c.i += len(lit)
	if !c.ended() {
		return false
	}
	c.out = append(c.out, lit...)
	return true
}

// number copies an integer of at most 15 digits, which a double holds
// exactly and ECMAScript writes as it is; any other number is parsed and
// written as jcs writes it.
func (c *canon) number() bool {
	j := c.i
	for j < len(c.in) && strings.IndexByte("-+.eE0123456789", c.in[j]) >= 0 {
		j++
	}
	tok := c.in[c.i:j]
	c.i = j
	if !c.ended() || !jsonNumber(tok) {
		return false
	}
	digits := tok
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) <= 15 && (digits[0] != '0' || len(tok) == 1) && digitsEnd(digits, 0) == len(digits) {
		c.out = append(c.out, tok...)
		return true
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return false
	}
	s, err := jcs.NumberToJSON(f)
	if err != nil {
		return false
	}
	c.out = append(c.out, s...)
	return true
}

// digitsEnd returns the index of the first byte at or after i in b that
// is not an ASCII digit.
func digitsEnd(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// jsonNumber reports whether tok follows RFC 8259's number grammar:
// -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
func jsonNumber(tok []byte) bool {
	i := 0
	if i < len(tok) && tok[i] == '-' {
		i++
	}
	switch {
	case i < len(tok) && tok[i] == '0':
		i++
	case i < len(tok) && tok[i] >= '1' && tok[i] <= '9':
		i = digitsEnd(tok, i+1)
	default:
		return false
	}
	if i < len(tok) && tok[i] == '.' {
		i++
		d := i
		if i = digitsEnd(tok, i); i == d {
			return false
		}
	}
	if i < len(tok) && (tok[i] == 'e' || tok[i] == 'E') {
		i++
		if i < len(tok) && (tok[i] == '+' || tok[i] == '-') {
			i++
		}
		d := i
		if i = digitsEnd(tok, i); i == d {
			return false
		}
	}
	return i == len(tok)
}

func (c *canon) array() bool {
	if c.depth++; c.depth > canonMaxDepth {
		return false
	}
	defer func() { c.depth-- }()
	c.i++
	c.out = append(c.out, '[')
	if c.i < len(c.in) && c.in[c.i] == ']' {
		c.i++
		c.out = append(c.out, ']')
		return true
	}
	for {
		if !c.value() || c.i >= len(c.in) {
			return false
		}
		switch c.in[c.i] {
		case ',':
			c.i++
			c.out = append(c.out, ',')
		case ']':
			c.i++
			c.out = append(c.out, ']')
			return true
		default:
			return false
		}
	}
}

// object reads an object's members, writing their values one after the
// other, then writes the object again with its members sorted.
func (c *canon) object() bool {
	if c.depth++; c.depth > canonMaxDepth {
		return false
	}
	defer func() { c.depth-- }()
	c.i++
	if c.i < len(c.in) && c.in[c.i] == '}' {
		c.i++
		c.out = append(c.out, '{', '}')
		return true
	}
	base, first := len(c.out), len(c.members)
	defer func() { c.members = c.members[:first] }()
	for {
		if c.i >= len(c.in) || c.in[c.i] != '"' {
			return false
		}
		name, ascii, ok := c.str()
		if !ok || c.i >= len(c.in) || c.in[c.i] != ':' {
			return false
		}
		c.i++
		start := len(c.out)
		if !c.value() || c.i >= len(c.in) {
			return false
		}
		c.members = append(c.members, member{name: name, ascii: ascii, start: start, end: len(c.out)})
		if c.in[c.i] == '}' {
			c.i++
			break
		}
		if c.in[c.i] != ',' {
			return false
		}
		c.i++
	}
	members := c.members[first:]
	slices.SortFunc(members, compareNames)
	for k := 1; k < len(members); k++ {
		if compareNames(members[k-1], members[k]) == 0 {
			return false
		}
	}
	c.scratch = append(c.scratch[:0], c.out[base:]...)
	values := c.scratch
	c.out = append(c.out[:base], '{')
	for k, m := range members {
		if k > 0 {
			c.out = append(c.out, ',')
		}
		c.out = canonjson.AppendString(c.out, m.name)
		c.out = append(c.out, ':')
		c.out = append(c.out, values[m.start-base:m.end-base]...)
	}
	c.out = append(c.out, '}')
	return true
}

// compareNames orders member names by their UTF-16 code units (RFC 8785
// §3.2.3); for ASCII names that is their byte order.
func compareNames(a, b member) int {
	if a.ascii && b.ascii {
		return bytes.Compare(a.name, b.name)
	}
	return slices.Compare(utf16.Encode([]rune(string(a.name))), utf16.Encode([]rune(string(b.name))))
}
