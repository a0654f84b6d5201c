package store

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestValidID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id string
		ok bool
	}{
		{"a", true}, {"run-1", true}, {"R_2.x-y", true}, {"0", true}, {strings.Repeat("a", 128), true},
		{"", false}, {strings.Repeat("a", 129), false}, {".hidden", false}, {"-x", false}, {"_x", false},
		{"a/b", false}, {"..", false}, {"a b", false}, {"é", false}, {"a:b", false},
	}
	for _, tt := range tests {
		err := ValidID(tt.id)
		if (err == nil) != tt.ok {
			t.Errorf("ValidID(%q) = %v, want ok=%v", tt.id, err, tt.ok)
		}
		if err != nil && (!errors.Is(err, ErrInvalidID) || (tt.id != "" && !strings.Contains(err.Error(), tt.id[:min(len(tt.id), 10)]))) {
			t.Errorf("ValidID(%q) error %q should wrap ErrInvalidID and name the value", tt.id, err)
		}
	}
}

func TestEventIDAndType(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"a", "dispatch:dag/draft/1", "x@y+z=w", "<>&", strings.Repeat("i", 256)} {
		if err := validEventID(id); err != nil {
			t.Errorf("validEventID(%q) = %v", id, err)
		}
	}
	for _, id := range []string{"", "a b", `a"b`, `a\b`, "a\nb", "é", strings.Repeat("i", 257)} {
		if err := validEventID(id); err == nil {
			t.Errorf("validEventID(%q) accepted", id)
		}
	}
	for _, typ := range []string{"t", "graph:node-completed", "a.b_c/d-e:f"} {
		if err := validEventType(typ); err != nil {
			t.Errorf("validEventType(%q) = %v", typ, err)
		}
	}
	for _, typ := range []string{"", ":x", "a b", "a@b", strings.Repeat("t", 129)} {
		if err := validEventType(typ); err == nil {
			t.Errorf("validEventType(%q) accepted", typ)
		}
	}
}

// TestValidIDNamesTheByte checks that a refused id's error says which
// character is wrong and why, not only its offset: "byte 0 is not allowed"
// reads as a NUL byte to a person who typed "../x".
func TestValidIDNamesTheByte(t *testing.T) {
	t.Parallel()
	tests := []struct{ id, want string }{
		{"../x", `byte 0 ('.') is not allowed: an id starts with a letter or digit`},
		{"-x", `byte 0 ('-') is not allowed: an id starts with a letter or digit`},
		{"a/b", `byte 1 ('/') is not allowed: an id holds only letters, digits, '.', '_' and '-'`},
		{"a b", `byte 1 (' ') is not allowed`},
		{"aé", `byte 1 ('é', U+00E9, not ASCII) is not allowed`},
		{"日本", `byte 0 ('日', U+65E5, not ASCII) is not allowed: an id starts with a letter or digit`},
		{"a\xff", `byte 1 (0xff, not ASCII) is not allowed`},
		{"a\x00", `byte 1 ('\x00') is not allowed`},
	}
	for _, tt := range tests {
		err := ValidID(tt.id)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ValidID(%q) = %v, want it to contain %q", tt.id, err, tt.want)
		}
	}
}

// TestQuoteShortCutsOnRunes: a long name quoted in an error is cut on a
// rune boundary and marked "…", never quoted as broken \x escapes.
func TestQuoteShortCutsOnRunes(t *testing.T) {
	t.Parallel()
	got := quoteShort(strings.Repeat("日", 30)) // 90 bytes; 64 falls inside a rune
	if strings.Contains(got, `\x`) || !strings.HasSuffix(got, "…") {
		t.Errorf("quoteShort = %s, want it cut on a rune boundary and marked with …", got)
	}
	if err := ValidID(strings.Repeat("日", 50)); err == nil || strings.Contains(err.Error(), `\x`) {
		t.Errorf("ValidID of 150 bytes of 日: %v, want a refusal quoting whole runes", err)
	}
}

// TestNewEventIDs checks the ids an append gives unnamed events across
// several reads of random bytes: each a version 4, RFC 4122 UUID, a valid
// event id, and none repeated.
func TestNewEventIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 5*idsPerRead + 3 {
		id := newEventID()
		u, err := uuid.Parse(id)
		if err != nil || u.String() != id {
			t.Fatalf("%q is not a UUID in its string form: %v", id, err)
		}
		if u.Version() != 4 || u.Variant() != uuid.RFC4122 {
			t.Fatalf("%s: version %d, variant %v; want a version 4 RFC 4122 UUID", id, u.Version(), u.Variant())
		}
		if err := validEventID(id); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if seen[id] {
			t.Fatalf("%s given twice", id)
		}
		seen[id] = true
	}
}
