package store

import (
	"bytes"
	"fmt"
	"time"

	"github.com/obversa/obversa/internal/canonjson"
)

// Sealer applies the record's rules to events and artifacts for a backend
// that keeps the record somewhere other than files (store/pgstore): the
// same checks, canonical form, line layout and digests as the file
// backend, so that a run read from any backend is byte for byte the
// events.jsonl the file backend would hold and verifies the same way
// (doc.go describes the rules). A Sealer is safe for concurrent use.
type Sealer struct {
	pol *policy
}

// NewSealer compiles p. Errors: ErrInvalidPolicy (a negative limit).
func NewSealer(p Policy) (*Sealer, error) {
	pol, err := compilePolicy(p)
	if err != nil {
		return nil, err
	}
	return &Sealer{pol: pol}, nil
}

// PreparedEvent is a NewEvent that passed the checks that do not depend on
// its place in the stream.
type PreparedEvent struct {
	ID   string // the caller's id, or a new random UUID
	Type string
	Data []byte // RFC 8785 canonical JSON, as stored
}

// Prepare checks and canonicalises the events of one Append: type and id
// syntax, data that is JSON exactly representable in RFC 8785 form, known
// secrets, max_event_payload_bytes, and ids repeated within the batch.
// Errors: ErrInvalidEvent (also for an empty batch), ErrKnownSecret,
// ErrStorageLimitExceeded (*LimitError). Messages never quote data.
func (s *Sealer) Prepare(events []NewEvent) ([]PreparedEvent, error) {
	if len(events) == 0 {
		return nil, fmt.Errorf("%w: empty batch", ErrInvalidEvent)
	}
	evs, err := prepareEvents(s.pol, events, true)
	if err != nil {
		return nil, err
	}
	out := make([]PreparedEvent, len(evs))
	for i, e := range evs {
		out[i] = PreparedEvent{ID: e.id, Type: e.typ, Data: e.canon}
	}
	return out, nil
}

// Seal places a prepared batch after revision after, whose event has
// digest prev ("" when after is 0), committed at ts: it returns the events
// with rev, batch_end, ts (UTC, truncated to milliseconds), prev and
// digest set, chained as the file backend chains them. The batch's size —
// the bytes of its lines, line feeds included — is held to
// max_batch_bytes (*LimitError, ErrStorageLimitExceeded).
func (s *Sealer) Seal(after int64, prev string, ts time.Time, batch []PreparedEvent) ([]Event, error) {
	if len(batch) == 0 {
		return nil, fmt.Errorf("%w: empty batch", ErrInvalidEvent)
	}
	if after < 0 || (after == 0) != (prev == "") {
		return nil, fmt.Errorf("store: seal: rev %d with prev %q is not a stream position", after, quoteShort(prev))
	}
	ts = ts.UTC().Truncate(time.Millisecond)
	end := after + int64(len(batch))
	out := make([]Event, len(batch))
	var buf []byte
	size := 0
	for i, ev := range batch {
		rev := after + 1 + int64(i)
		var sum [32]byte
		buf, sum = encodeLine(buf[:0], rev, end, ev.ID, ev.Type, ts, ev.Data, prev)
		size += len(buf)
		d := digestString(sum)
		out[i] = Event{Rev: rev, ID: ev.ID, Type: ev.Type, TS: ts, Data: ev.Data, Prev: prev, Digest: d, BatchEnd: end}
		prev = d
	}
	if max := s.pol.MaxBatchBytes; max > 0 && int64(size) > max {
		return nil, &LimitError{Limit: "max_batch_bytes", Max: max, Size: int64(size),
			What: fmt.Sprintf("a batch of %d event(s)", len(batch))}
	}
	return out, nil
}

// PrepareArtifact applies the artifact rules that do not depend on where
// the blob is kept (doc.go, "Policy and secrets"): it checks the media type
// (RFC 6838) and purpose, redacts known secrets in text/* (returning the
// redacted bytes, which the reference describes) and refuses them
// elsewhere, checks max_artifact_bytes, and returns the reference and the
// bytes to store. Errors: ErrInvalidArtifact, ErrKnownSecret,
// ErrStorageLimitExceeded.
func (s *Sealer) PrepareArtifact(data []byte, mediaType, purpose string) (ArtifactRef, []byte, error) {
	return s.pol.prepareArtifact(data, mediaType, purpose)
}

// CheckRunTotal refuses a new distinct artifact ref when the run already
// stores total bytes of distinct artifacts and ref would take it past
// max_total_artifact_bytes_per_run (*LimitError, ErrStorageLimitExceeded).
func (s *Sealer) CheckRunTotal(total int64, ref ArtifactRef) error {
	return s.pol.checkRunTotal(total, ref)
}

// CheckRef checks a reference's form: a "sha256:<64 lower-case hex>"
// digest and a non-negative size. It returns the digest's hex part, or an
// error wrapping ErrArtifactIntegrity.
func CheckRef(ref ArtifactRef) (string, error) {
	return refHex(ref)
}

// prepareEvents checks and canonicalises the events of one Append under
// pol: type, id, data (JSON, exactly canonicalisable), known secrets,
// max_event_payload_bytes and ids repeated within the batch. keep says the
// prepared data outlives the call it serves (Sealer.Prepare hands it to
// its caller): data given as a json.RawMessage is then copied, where the
// file store's append, which encodes it before it returns, reads the
// caller's bytes in place.
func prepareEvents(pol *policy, events []NewEvent, keep bool) ([]prepared, error) {
	out := make([]prepared, len(events))
	var seen map[string]int
	if len(events) > 1 {
		seen = make(map[string]int, len(events))
	}
	enc := encoders.Get().(*encoder)
	defer putEncoder(enc)
	for i, ev := range events {
		what := func() string { return fmt.Sprintf("%d of %d", i+1, len(events)) }
		if err := validEventType(ev.Type); err != nil {
			return nil, fmt.Errorf("%w: event %s: %v", ErrInvalidEvent, what(), err)
		}
		id, fresh := ev.ID, false
		if id == "" {
			id, fresh = newEventID(), true
		} else if err := validEventID(id); err != nil {
			return nil, fmt.Errorf("%w: event %s (type %q): %v", ErrInvalidEvent, what(), ev.Type, err)
		}
		raw, valid, err := marshalData(ev.Data, enc, keep)
		if err != nil {
			return nil, fmt.Errorf("%w: event %s (type %q): %v", ErrInvalidEvent, what(), ev.Type, err)
		}
		if pol.hasSecrets() && pol.containsSecret(raw) {
			// Refuse before anything else looks at the data.
			if err := pol.checkEventSecrets(what(), ev.Type, id, raw, raw); err != nil {
				return nil, err
			}
		}
		canon, err := canonjson.Data(raw, valid)
		if err != nil {
			return nil, &CanonicalError{Problem: fmt.Sprintf("event %s (type %q): %v", what(), ev.Type, err)}
		}
		if len(canon) > 0 && enc.buf.Len() > 0 && &canon[0] == &enc.buf.Bytes()[0] {
			canon = bytes.Clone(canon) // the encoder's buffer is reused
		}
		if pol.hasSecrets() {
			if err := pol.checkEventSecrets(what(), ev.Type, id, raw, canon); err != nil {
				return nil, err
			}
		}
		if max := pol.MaxEventPayloadBytes; max > 0 && int64(len(canon)) > max {
			return nil, &LimitError{Limit: "max_event_payload_bytes", Max: max, Size: int64(len(canon)),
				What: fmt.Sprintf("the data of event %s (type %q)", what(), ev.Type)}
		}
		if seen != nil {
			if j, dup := seen[id]; dup {
				return nil, fmt.Errorf("%w: events %d and %d of the batch have the same id", ErrInvalidEvent, j+1, i+1)
			}
			seen[id] = i
		}
		out[i] = prepared{id: id, typ: ev.Type, canon: canon, hash: idHash([]byte(id)), fresh: fresh}
	}
	return out, nil
}
