package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/obversa/obversa/internal/canonjson"
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
	// KnownSecretSources names where each of KnownSecrets came from, by
	// index: the host puts the environment variable known_secrets_from_env
	// read it from. A refusal names the source of the secret it found
	// ("the known secret OPENAI_API_KEY"), never its value; a secret with
	// no source ("" or past the end) is "a known secret".
	KnownSecretSources []string
}

// redactionMarker replaces a known secret in free-text artifacts.
const redactionMarker = "[REDACTED]"

// policy is a validated Policy with the secrets prepared for matching.
type policy struct {
	Policy
	// forms holds every byte form in which a secret may appear: the raw
	// value, its RFC 8785 string escaping and encoding/json's (HTML-safe)
	// escaping — longest first, so redaction prefers the longest match.
	forms []secretForm
	// raws holds the raw secret values.
	raws []secretForm
}

// secretForm is one form of a known secret (b) and the name of its source
// (Policy.KnownSecretSources; "" for none).
type secretForm struct {
	b   []byte
	src string
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
	cp.KnownSecretSources = append([]string(nil), p.KnownSecretSources...)
	seen := map[string]bool{}
	for i, s := range p.KnownSecrets {
		if s == "" {
			continue
		}
		src := ""
		if i < len(p.KnownSecretSources) {
			src = p.KnownSecretSources[i]
		}
		add := func(b []byte) {
			if len(b) > 0 && !seen[string(b)] {
				seen[string(b)] = true
				cp.forms = append(cp.forms, secretForm{b, src})
			}
		}
		cp.raws = append(cp.raws, secretForm{[]byte(s), src})
		add([]byte(s))
		q := canonjson.AppendString(nil, s)
		add(q[1 : len(q)-1])
		if m, err := json.Marshal(s); err == nil {
			add(m[1 : len(m)-1])
		}
	}
	sort.SliceStable(cp.forms, func(i, j int) bool { return len(cp.forms[i].b) > len(cp.forms[j].b) })
	return cp, nil
}

// hasSecrets reports whether any secret is configured.
func (p *policy) hasSecrets() bool { return len(p.forms) > 0 }

// containsSecret reports whether b contains any form of any secret.
func (p *policy) containsSecret(b []byte) bool {
	_, found := p.secretIn(b)
	return found
}

// secretIn reports whether b contains any form of any secret, and names
// the first found for a refusal (secretName).
func (p *policy) secretIn(b []byte) (name string, found bool) {
	for _, f := range p.forms {
		if bytes.Contains(b, f.b) {
			return secretName(f.src), true
		}
	}
	return "", false
}

// containsRawSecret reports whether the decoded text s contains a secret.
func (p *policy) containsRawSecret(s string) bool {
	_, found := p.rawSecretIn(s)
	return found
}

// rawSecretIn reports whether the decoded text s contains a secret, and
// names it for a refusal (secretName).
func (p *policy) rawSecretIn(s string) (name string, found bool) {
	for _, r := range p.raws {
		if len(r.b) <= len(s) && bytes.Contains([]byte(s), r.b) {
			return secretName(r.src), true
		}
	}
	return "", false
}

// secretName is how a refusal names a secret with source src: "the known
// secret OPENAI_API_KEY", or "a known secret" when it has none. It never
// holds the value.
func secretName(src string) string {
	if src == "" {
		return "a known secret"
	}
	return "the known secret " + src
}
