package store

import (
	"bufio"
	"crypto/rand"
	"fmt"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/obversa/obversa/internal/runecut"
)

const (
	maxIDLen        = 128 // run ids and namespaces
	maxEventIDLen   = 256 // event ids
	maxEventTypeLen = 128 // event types
)

// ValidID reports whether id may name a run or a namespace:
// [A-Za-z0-9][A-Za-z0-9._-]{0,127}. The error wraps ErrInvalidID and quotes
// the value (ids are not secret).
func ValidID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty id", ErrInvalidID)
	}
	if len(id) > maxIDLen {
		return fmt.Errorf("%w: %s is %d bytes, the limit is %d", ErrInvalidID, quoteShort(id), len(id), maxIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if isAlnum(c) || (i > 0 && (c == '.' || c == '_' || c == '-')) {
			continue
		}
		why := "an id holds only letters, digits, '.', '_' and '-'"
		if i == 0 {
			why = "an id starts with a letter or digit"
		}
		return fmt.Errorf("%w: %s: byte %d (%s) is not allowed: %s (want [A-Za-z0-9][A-Za-z0-9._-]{0,127})",
			ErrInvalidID, quoteShort(id), i, describeAt(id, i), why)
	}
	return nil
}

// describeAt names the character at byte i of id for an error message:
// the byte as describeByte does for ASCII, else the whole rune that
// starts there (quoted and as U+XXXX), or, for bytes that are not UTF-8,
// the byte in hex.
func describeAt(id string, i int) string {
	r, n := utf8.DecodeRuneInString(id[i:])
	if id[i] < 0x80 || (r == utf8.RuneError && n <= 1) {
		return describeByte(id[i])
	}
	return fmt.Sprintf("%s, %U, not ASCII", strconv.QuoteRune(r), r)
}

// describeByte names a byte for an error message: the quoted character when
// it is ASCII ('.' or '\x00'), else its value in hex, so a person sees which
// character of an id is wrong rather than only its offset.
func describeByte(c byte) string {
	if c < 0x80 {
		return strconv.QuoteRuneToASCII(rune(c))
	}
	return fmt.Sprintf("0x%02x, not ASCII", c)
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// validEventID checks a caller-supplied event id: 1..256 bytes of printable
// ASCII other than '"' and '\'. The restriction means an id is written
// verbatim inside its JSON string (no escaping), which the envelope decoder
// relies on. It does not quote the value: it may be a secret.
func validEventID(id string) error {
	if id == "" || len(id) > maxEventIDLen {
		return fmt.Errorf("id must be 1..%d bytes, got %d", maxEventIDLen, len(id))
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return fmt.Errorf("id byte %d is not printable ASCII other than '\"' and '\\'", i)
		}
	}
	return nil
}

// validEventType checks an event type: [A-Za-z0-9][A-Za-z0-9._:/-]{0,127},
// e.g. "graph:node-completed".
func validEventType(t string) error {
	if t == "" || len(t) > maxEventTypeLen {
		return fmt.Errorf("type must be 1..%d bytes, got %d", maxEventTypeLen, len(t))
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if isAlnum(c) || (i > 0 && (c == '.' || c == '_' || c == ':' || c == '/' || c == '-')) {
			continue
		}
		return fmt.Errorf("type byte %d is not allowed (want [A-Za-z0-9][A-Za-z0-9._:/-]{0,127})", i)
	}
	return nil
}

// quoteShort quotes s for an error message, cut to 64 bytes on a rune
// boundary (a multibyte name is not quoted as broken escapes).
func quoteShort(s string) string {
	if len(s) > 64 {
		return strconv.Quote(runecut.Prefix(s, 64)) + "…"
	}
	return strconv.Quote(s)
}

// eventIDs buffers random bytes for the ids of events an appender leaves
// unnamed: crypto/rand is read for idsPerRead ids at a time instead of
// once per id (a chain node's batch names three events), as google/uuid's
// own pool (uuid.EnableRandPool) does, without turning that pool on for
// every user of the package in the process. The ids identify events and
// guard nothing.
var eventIDs = struct {
	mu sync.Mutex
	r  *bufio.Reader
}{r: bufio.NewReaderSize(rand.Reader, idsPerRead*16)}

const idsPerRead = 16

// newEventID returns a fresh random (version 4) UUID in its string form.
// It panics only if crypto/rand fails, which its contract rules out.
func newEventID() string {
	eventIDs.mu.Lock()
	u, err := uuid.NewRandomFromReader(eventIDs.r)
	eventIDs.mu.Unlock()
	if err != nil {
		panic(fmt.Sprintf("store: reading random bytes for an event id: %v", err))
	}
	return u.String()
}
