package store

import (
	"strings"
	"testing"
)

// TestRedactorFind: Find tells a known secret in any form Redact replaces
// and names it by its source, never by its value; a secret with no source
// is "a known secret", text without one is not found.
func TestRedactorFind(t *testing.T) {
	t.Parallel()
	r := NewPolicyRedactor(secretPolicy)
	tests := []struct {
		name, text, want string
	}{
		{"raw", "prompt with plain-secret-value in it", plainName},
		{"JSON-escaped", `{"k":"sk-test-4f7b\"c9\n2a\u003cd\u003e"}`, tokenName},
		{"none", "nothing secret here", ""},
	}
	for _, tt := range tests {
		name, found := r.Find([]byte(tt.text))
		if found != (tt.want != "") || name != tt.want {
			t.Errorf("%s: Find = %q, %v; want %q", tt.name, name, found, tt.want)
		}
		if found && string(r.Redact([]byte(tt.text))) == tt.text {
			t.Errorf("%s: Find found what Redact leaves", tt.name)
		}
		if strings.Contains(name, "secret-value") || strings.Contains(name, "sk-test") {
			t.Errorf("%s: the name %q holds the value", tt.name, name)
		}
	}
	if name, found := NewRedactor([]string{"plain-secret-value"}).Find([]byte("a plain-secret-value")); !found || name != "a known secret" {
		t.Errorf("unnamed secret: Find = %q, %v; want \"a known secret\"", name, found)
	}
	if _, found := (*Redactor)(nil).Find([]byte("plain-secret-value")); found {
		t.Error("a nil Redactor found a secret")
	}
}
