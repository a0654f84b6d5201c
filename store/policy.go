package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// Policy is the storage part of the run file's `storage` block
// (docs/run-file.md). Zero limits mean unlimited. The host fills KnownSecrets from the
// environment variables named by known_secrets_from_env.
type Policy struct {
	// MaxEventPayloadBytes limits each event's data, counted as the bytes of
	// its RFC 8785 canonical form (what is stored). 0 = unlimited.
	MaxEventPayloadBytes int64
	// MaxBatchBytes limits one Append call, counted as the bytes of all the
	// lines it writes (envelopes included). 0 = unlimited.
	MaxBatchBytes int64
	// MaxArtifactBytes limits one artifact as stored (after redaction).
	// 0 = unlimited.
	MaxArtifactBytes int64
	// MaxTotalArtifactBytesPerRun limits the sum of the sizes of the run's
	// distinct artifacts (a blob stored twice counts once). 0 = unlimited.
	MaxTotalArtifactBytesPerRun int64
	// KnownSecrets are values that must never be stored: an event or a
	// structured artifact containing one is refused (ErrKnownSecret), a
	// free-text artifact has it replaced by "[REDACTED]". Empty strings are
	// ignored. The values are never written anywhere, errors included.
	KnownSecrets []string
}

// redactionMarker replaces a known secret in free-text artifacts.
const redactionMarker = "[REDACTED]"

// policy is a validated Policy with the secrets prepared for matching.
type policy struct {
	Policy
	// forms holds every byte form in which a secret may appear: the raw
	// value, its RFC 8785 string escaping and encoding/json's (HTML-safe)
	// escaping — longest first, so redaction prefers the longest match.
	forms [][]byte
	// raws holds the raw secret values.
	raws []string
}

// compilePolicy validates p and prepares its secrets.
func compilePolicy(p Policy) (*policy, error) {
	for _, l := range []struct {
		name string
		v    int64
	}{
		{"max_event_payload_bytes", p.MaxEventPayloadBytes},
		{"max_batch_bytes", p.MaxBatchBytes},
		{"max_artifact_bytes", p.MaxArtifactBytes},
		{"max_total_artifact_bytes_per_run", p.MaxTotalArtifactBytesPerRun},
	} {
		if l.v < 0 {
			return nil, fmt.Errorf("%w: %s is negative (%d); use 0 for unlimited", ErrInvalidPolicy, l.name, l.v)
		}
	}
	cp := &policy{Policy: p}
	cp.KnownSecrets = append([]string(nil), p.KnownSecrets...)
	seen := map[string]bool{}
	add := func(b []byte) {
		if len(b) > 0 && !seen[string(b)] {
			seen[string(b)] = true
			cp.forms = append(cp.forms, b)
		}
	}
	for _, s := range p.KnownSecrets {
		if s == "" {
			continue
		}
		cp.raws = append(cp.raws, s)
		add([]byte(s))
		add(appendJCSString(nil, s))
		if m, err := json.Marshal(s); err == nil {
			add(m[1 : len(m)-1])
		}
	}
	sort.SliceStable(cp.forms, func(i, j int) bool { return len(cp.forms[i]) > len(cp.forms[j]) })
	return cp, nil
}

// hasSecrets reports whether any secret is configured.
func (p *policy) hasSecrets() bool { return len(p.forms) > 0 }

// containsSecret reports whether b contains any form of any secret.
func (p *policy) containsSecret(b []byte) bool {
	for _, f := range p.forms {
		if bytes.Contains(b, f) {
			return true
		}
	}
	return false
}

// containsRawSecret reports whether the decoded text s contains a secret.
func (p *policy) containsRawSecret(s string) bool {
	for _, r := range p.raws {
		if len(r) <= len(s) && bytes.Contains([]byte(s), []byte(r)) {
			return true
		}
	}
	return false
}
