package store

import "bytes"

// AppendLine appends to dst the line events.jsonl holds for e — the
// canonical envelope with e.Digest as stored, not recomputed, and a line
// feed — so that a backend keeping the envelope's members in columns can
// hand its events to the same checks as the file backend (ParseLine,
// VerifyLines). Members are written as they are: a value that does not
// belong in an envelope yields a line those checks refuse.
func AppendLine(dst []byte, e Event) []byte {
	dst, _ = encodeLine(dst, e.Rev, e.BatchEnd, e.ID, e.Type, e.TS, e.Data, e.Prev)
	dst = dst[:len(dst)-len(litEnd)-1-digestLen] // keep `…,"digest":"`
	dst = append(dst, e.Digest...)
	return append(dst, litEnd+"\n"...)
}

// ParseLine decodes one event line (a trailing line feed is allowed) as
// strictly as opening events.jsonl does: the envelope's members in
// canonical layout, data in RFC 8785 canonical form, a valid id, type and
// ts, and a digest matching the content. It does not check the line's
// place in a stream (rev, prev, batch_end against its neighbours). The
// error is a *CorruptError (ErrCorruptEventStream) with Problem set, and
// Rev and Line set to the rev the line claims when it decoded that far;
// the caller fills in Path. The line's bytes are briefly modified while
// hashed and restored before ParseLine returns.
func ParseLine(line []byte) (Event, error) {
	line = bytes.TrimSuffix(line, newline)
	env, problem := decodeLine(line, true)
	if problem != "" {
		return Event{}, &CorruptError{Line: int(env.rev), Rev: env.rev, Problem: problem}
	}
	return env.event(), nil
}

// Err is the error Verify returns with rep: nil without faults, else one
// wrapping the first fault's sentinel (ErrCorruptEventStream,
// ErrArtifactNotFound or ErrArtifactIntegrity) and naming the run (name)
// and the number of faults.
func (rep Report) Err(name string) error {
	return verifyError(name, rep)
}
