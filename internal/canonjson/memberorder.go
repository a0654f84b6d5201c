package canonjson

import (
	"slices"
	"sync"
)

// sortMembers is the fast path of canonicalisation for JSON that is already
// canonical in every respect but the order of object members — which is
// what encoding/json produces for Go structs (fields in declaration order).
// It returns raw with the members of every object sorted by the UTF-16 code
// units of their names, without touching any name, value or number. ok is
// false — and the caller must use the JCS library instead — for anything
// else it meets: whitespace, a name with an escape RFC 8785 would not use,
// malformed input, nesting beyond the library's limit.
//
// Reordering members never changes the JSON value, so when the result also
// passes isCanonicalJSON it is, byte for byte, what the library would return
// (the canonical form of a value is unique). canonicalDataOf relies on
// exactly that; FuzzSortMembers checks it against the library.
func sortMembers(raw []byte) (out []byte, ok bool) {
	m := sorters.Get().(*memberSorter)
	defer func() {
		m.in, m.out = nil, nil
		if cap(m.scratch) <= 64<<10 {
			sorters.Put(m)
		}
	}()
	m.in, m.i, m.out, m.members = raw, 0, make([]byte, 0, len(raw)), m.members[:0]
	if !m.value(0) || m.i != len(raw) {
		return nil, false
	}
	return m.out, true
}

// sorters holds memberSorters, for their scratch buffers.
var sorters = sync.Pool{New: func() any { return new(memberSorter) }}

type memberSorter struct {
	in      []byte
	i       int
	out     []byte
	scratch []byte
	members []member // a stack: each open object's members, innermost last
}

func (m *memberSorter) value(depth int) bool {
	if m.i >= len(m.in) {
		return false
	}
	switch m.in[m.i] {
	case '{':
		return m.object(depth + 1)
	case '[':
		return m.array(depth + 1)
	case '"':
		_, ok := m.str(false)
		return ok
	default:
		start := m.i
		for m.i < len(m.in) && !isDelim(m.in[m.i]) {
			c := m.in[m.i]
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '"' || c == '{' || c == '[' || c == ':' {
				return false
			}
			m.i++
		}
		if m.i == start {
			return false
		}
		m.out = append(m.out, m.in[start:m.i]...)
		return true
	}
}

// str copies the string at m.i. For a member name (name true) it also
// requires the escapes RFC 8785 uses, so that compareKeys can order it.
func (m *memberSorter) str(name bool) ([]byte, bool) {
	start := m.i
	m.i++
	for m.i < len(m.in) {
		switch c := m.in[m.i]; {
		case c == '"':
			m.i++
			m.out = append(m.out, m.in[start:m.i]...)
			return m.in[start+1 : m.i-1], true
		case c == '\\':
			if m.i+1 >= len(m.in) {
				return nil, false
			}
			switch m.in[m.i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				m.i += 2
			case 'u':
				if m.i+6 > len(m.in) {
					return nil, false
				}
				if name && !(m.in[m.i+2] == '0' && m.in[m.i+3] == '0' && (m.in[m.i+4] == '0' || m.in[m.i+4] == '1') && isLowerHex(m.in[m.i+5])) {
					return nil, false
				}
				m.i += 6
			default:
				return nil, false
			}
		case c < 0x20:
			return nil, false
		default:
			m.i++
		}
	}
	return nil, false
}

func isLowerHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

func (m *memberSorter) array(depth int) bool {
	if depth > maxCanonDepth {
		return false
	}
	m.out = append(m.out, '[')
	m.i++
	if m.i < len(m.in) && m.in[m.i] == ']' {
		m.i++
		m.out = append(m.out, ']')
		return true
	}
	for {
		if !m.value(depth) || m.i >= len(m.in) {
			return false
		}
		c := m.in[m.i]
		m.i++
		m.out = append(m.out, c)
		switch c {
		case ',':
		case ']':
			return true
		default:
			return false
		}
	}
}

// member is one member of an object as written to out: name is the name's
// string body (in the input), from..to its output bytes (name, ':', value).
type member struct {
	name     []byte
	from, to int
}

func (m *memberSorter) object(depth int) bool {
	if depth > maxCanonDepth {
		return false
	}
	m.out = append(m.out, '{')
	m.i++
	if m.i < len(m.in) && m.in[m.i] == '}' {
		m.i++
		m.out = append(m.out, '}')
		return true
	}
	base := len(m.out)
	first := len(m.members) // this object's members are m.members[first:]
	sorted := true
	for {
		if m.i >= len(m.in) || m.in[m.i] != '"' {
			return false
		}
		from := len(m.out)
		name, ok := m.str(true)
		if !ok || m.i >= len(m.in) || m.in[m.i] != ':' {
			return false
		}
		m.i++
		m.out = append(m.out, ':')
		if !m.value(depth) || m.i >= len(m.in) {
			return false
		}
		if n := len(m.members); n > first && compareKeys(m.members[n-1].name, name) >= 0 {
			sorted = false
		}
		m.members = append(m.members, member{name: name, from: from, to: len(m.out)})
		c := m.in[m.i]
		m.i++
		switch c {
		case ',':
			m.out = append(m.out, ',')
		case '}':
			if !sorted {
				m.reorder(base, m.members[first:])
			}
			m.members = m.members[:first] // the enclosing object's again
			m.out = append(m.out, '}')
			return true
		default:
			return false
		}
	}
}

// reorder rewrites out[base:] — the members, comma-separated — in name
// order. Equal names stay in place (isCanonicalJSON then refuses them).
func (m *memberSorter) reorder(base int, members []member) {
	slices.SortStableFunc(members, func(a, b member) int { return compareKeys(a.name, b.name) })
	m.scratch = append(m.scratch[:0], m.out[base:]...)
	m.out = m.out[:base]
	for k, mem := range members {
		if k > 0 {
			m.out = append(m.out, ',')
		}
		m.out = append(m.out, m.scratch[mem.from-base:mem.to-base]...)
	}
}
