package store

import "bytes"

// Redactor replaces known secrets in free text with the record's marker,
// in every form the record recognises: the raw value, its RFC 8785 string
// escaping and encoding/json's escaping (so a secret inside a JSON log line
// is found too). Logs beside the record (plugins.log, worker.log) use it so
// that a secret never reaches a file under the storage directory
// (docs/architecture.md#the-record). The zero value and nil redact nothing.
type Redactor struct{ p *policy }

// NewRedactor returns a Redactor for the given secret values; empty values
// are ignored.
func NewRedactor(secrets []string) *Redactor {
	return NewPolicyRedactor(Policy{KnownSecrets: secrets})
}

// NewPolicyRedactor returns a Redactor for p's known secrets, which Find
// names by p.KnownSecretSources; p's limits play no part.
func NewPolicyRedactor(p Policy) *Redactor {
	cp, _ := compilePolicy(Policy{KnownSecrets: p.KnownSecrets, KnownSecretSources: p.KnownSecretSources}) // no limits: cannot fail
	return &Redactor{p: cp}
}

// Find reports whether b holds a known secret in any form Redact replaces,
// and names it for a message ("the known secret OPENAI_API_KEY", or "a
// known secret" when its source is unknown), never by its value.
func (r *Redactor) Find(b []byte) (name string, found bool) {
	if r == nil || r.p == nil {
		return "", false
	}
	return r.p.secretIn(b)
}

// Redact returns b with every occurrence of a secret replaced by the
// marker; b itself when there is none.
func (r *Redactor) Redact(b []byte) []byte {
	if r == nil || r.p == nil {
		return b
	}
	out, _ := r.p.redact(b)
	return out
}

// RedactString is Redact for a string.
func (r *Redactor) RedactString(s string) string {
	if r == nil || r.p == nil || !r.p.hasSecrets() {
		return s
	}
	return string(r.Redact([]byte(s)))
}

// Longest returns the length in bytes of the longest form of any secret, 0
// when there is none: a writer that redacts a stream in pieces holds back
// Longest()-1 bytes so that no secret is split between two pieces.
func (r *Redactor) Longest() int {
	if r == nil || r.p == nil || len(r.p.forms) == 0 {
		return 0
	}
	return len(r.p.forms[0].b) // sorted longest first
}

// RedactStream redacts the longest prefix of b that no secret can reach
// past: text that may be the start of a secret whose end has not arrived
// yet is left for a later call. It returns the redacted prefix and the
// number of bytes of b it covers; the caller keeps b[n:] and prepends it
// to what comes next.
func (r *Redactor) RedactStream(b []byte) (out []byte, n int) {
	hold := r.Longest() - 1
	if hold <= 0 {
		return b, len(b)
	}
	cut := max(len(b)-hold, 0)
	// A secret found whole in b that straddles the cut moves the cut to
	// its start, so that it is redacted whole next time.
	for moved := true; moved; {
		moved = false
		for _, sf := range r.p.forms {
			f := sf.b
			from := max(cut-len(f)+1, 0)
			if k := bytes.Index(b[from:], f); k >= 0 && from+k < cut && from+k+len(f) > cut {
				cut, moved = from+k, true
			}
		}
	}
	return r.Redact(b[:cut]), cut
}
