package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/obversa/obversa/internal/canonjson"
)

// tsLayout is the on-disk timestamp: RFC 3339, milliseconds, UTC.
const tsLayout = "2006-01-02T15:04:05.000Z"

const (
	digestPrefix = "sha256:"
	digestLen    = len(digestPrefix) + 64 // "sha256:" + 64 lower-case hex
	maxSafeInt   = 1<<53 - 1              // largest integer an I-JSON number holds exactly
)

// Event is one committed event as read back from the stream.
//
// On disk each event is one line: the RFC 8785 canonical JSON of the
// envelope without digest (members batch_end, data, id, prev, rev, ts, type
// in that order), with a last member "digest" appended. See doc.go.
type Event struct {
	Rev    int64           `json:"rev"`    // 1-based, contiguous
	ID     string          `json:"id"`     // unique in the stream
	Type   string          `json:"type"`   // e.g. "graph:node-completed"
	TS     time.Time       `json:"ts"`     // commit time, UTC, millisecond precision
	Data   json.RawMessage `json:"data"`   // RFC 8785 canonical JSON of NewEvent.Data
	Prev   string          `json:"prev"`   // Digest of rev-1; "" for rev 1
	Digest string          `json:"digest"` // "sha256:<hex>" over the canonical envelope without digest
	// BatchEnd is the rev of the last event of the Append call that wrote
	// this event. A batch is complete when its line with Rev == BatchEnd is
	// present; recovery uses it to find torn batches.
	BatchEnd int64 `json:"batch_end"`
}

// MarshalJSON returns the event exactly as it is stored on disk (without
// the line feed), so a marshalled Event can be re-verified.
func (e Event) MarshalJSON() ([]byte, error) {
	if err := validEventType(e.Type); err != nil {
		return nil, err
	}
	if err := validEventID(e.ID); err != nil {
		return nil, err
	}
	data := e.Data
	if data == nil {
		data = json.RawMessage("null")
	}
	line, _ := encodeLine(nil, e.Rev, e.BatchEnd, e.ID, e.Type, e.TS, data, e.Prev)
	return line[:len(line)-1], nil
}

// encodeLine appends one event line (with its line feed) to dst and returns
// it with the event's digest. data must already be canonical; id and type
// valid (they are written without escaping).
func encodeLine[P string | []byte](dst []byte, rev, batchEnd int64, id, typ string, ts time.Time, data []byte, prev P) ([]byte, [32]byte) {
	start := len(dst)
	dst = append(dst, `{"batch_end":`...)
	dst = strconv.AppendInt(dst, batchEnd, 10)
	dst = append(dst, `,"data":`...)
	dst = append(dst, data...)
	dst = append(dst, `,"id":"`...)
	dst = append(dst, id...)
	dst = append(dst, `","prev":"`...)
	dst = append(dst, prev...)
	dst = append(dst, `","rev":`...)
	dst = strconv.AppendInt(dst, rev, 10)
	dst = append(dst, `,"ts":"`...)
	dst = appendTS(dst, ts)
	dst = append(dst, `","type":"`...)
	dst = append(dst, typ...)
	dst = append(dst, '"', '}')
	sum := sha256.Sum256(dst[start:])
	dst = dst[:len(dst)-1]
	dst = append(dst, `,"digest":"sha256:`...)
	dst = hex.AppendEncode(dst, sum[:])
	dst = append(dst, '"', '}', '\n')
	return dst, sum
}

// envelope is a decoded line. Its byte slices alias the line.
type envelope struct {
	rev, batchEnd int64
	id, typ, ts   []byte
	data          []byte
	prev          []byte
	digest        [32]byte
	time          time.Time // ts parsed
}

// event copies env into an Event (Data is copied, so the line buffer may be
// reused).
func (env *envelope) event() Event {
	e := Event{
		Rev:      env.rev,
		ID:       string(env.id),
		Type:     string(env.typ),
		TS:       env.time,
		Data:     bytes.Clone(env.data),
		Prev:     string(env.prev),
		BatchEnd: env.batchEnd,
	}
	e.Digest = digestString(env.digest)
	return e
}

func digestString(sum [32]byte) string {
	return string(appendDigest(make([]byte, 0, digestLen), sum))
}

// appendDigest appends "sha256:<hex>" of sum to dst.
func appendDigest(dst []byte, sum [32]byte) []byte {
	dst = append(dst, digestPrefix...)
	return hex.AppendEncode(dst, sum[:])
}

// parseDigest decodes "sha256:<64 lower-case hex>".
func parseDigest(s []byte) ([32]byte, bool) {
	var sum [32]byte
	if len(s) != digestLen || string(s[:len(digestPrefix)]) != digestPrefix {
		return sum, false
	}
	// One pass: a read of a record parses three digests an event.
	h := s[len(digestPrefix):]
	for i := range sum {
		hi, lo := lowerHex(h[2*i]), lowerHex(h[2*i+1])
		if hi|lo > 0x0f {
			return [32]byte{}, false
		}
		sum[i] = hi<<4 | lo
	}
	return sum, true
}

// lowerHex returns the value of a lower-case hex digit, 0xff for any
// other byte.
func lowerHex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return 0xff
}

// Literal pieces of the line, in order.
const (
	litBatchEnd = `{"batch_end":`
	litData     = `,"data":`
	litID       = `,"id":"`
	litPrev     = `","prev":"`
	litRev      = `","rev":`
	litTS       = `,"ts":"`
	litType     = `","type":"`
	litDigest   = `","digest":"`
	litEnd      = `"}`
)

// decodeLine decodes one line (without its line feed) strictly: the members
// must be exactly those of the envelope, in canonical order, each value in
// canonical form; the digest must match. With checkData, data must also be
// its own RFC 8785 canonical form (one pass of canonjson.IsCanonical; without it
// the digest alone protects bytes that were validated before). The line slice is
// briefly modified and restored while hashing. problem is "" on success and
// never quotes event content.
func decodeLine(line []byte, checkData bool) (env envelope, problem string) {
	dataStart, problem := decodeHead(line, &env)
	if problem != "" {
		return env, problem
	}
	canonEnd, problem := decodeTail(line, dataStart, &env)
	if problem != "" {
		return env, problem
	}
	if problem = checkEnvelope(&env); problem != "" {
		return env, problem
	}
	if checkData && !canonjson.IsCanonical(env.data) {
		// A misplaced member ends up inside what the layout takes for
		// data; name it rather than blame data.
		if p := describeEnvelopeProblem(line); p != layoutProblem {
			return env, p
		}
		return env, "data is not JSON in RFC 8785 canonical form"
	}
	save := line[canonEnd]
	line[canonEnd] = '}'
	got := sha256.Sum256(line[:canonEnd+1])
	line[canonEnd] = save
	if got != env.digest {
		return env, "digest does not match the event's content"
	}
	return env, ""
}

// decodeHead reads the members before data (batch_end) into env and
// returns where data starts.
func decodeHead(line []byte, env *envelope) (dataStart int, problem string) {
	n := len(line)
	if !bytes.HasPrefix(line, []byte(litBatchEnd)) || n < len(litBatchEnd)+len(litEnd)+digestLen {
		return 0, describeEnvelopeProblem(line)
	}
	p := len(litBatchEnd)
	q := p
	for q < n && line[q] >= '0' && line[q] <= '9' {
		q++
	}
	be, ok := parseCanonInt(line[p:q])
	if !ok {
		return 0, "batch_end is not a canonical positive integer"
	}
	env.batchEnd = be
	if !bytes.HasPrefix(line[q:], []byte(litData)) {
		return 0, describeEnvelopeProblem(line)
	}
	return q + len(litData), ""
}

// tailCursor walks a line backwards from its end, never past dataStart.
type tailCursor struct {
	line      []byte
	dataStart int
	e         int // end of what is not read yet
}

// cut consumes lit if the unread part ends with it.
func (c *tailCursor) cut(lit string) bool {
	if c.e-len(lit) < c.dataStart || string(c.line[c.e-len(lit):c.e]) != lit {
		return false
	}
	c.e -= len(lit)
	return true
}

// quoted consumes a string value ending at e, up to and not including its
// opening quote, and returns it; nil when no quote is left.
func (c *tailCursor) quoted() []byte {
	k := bytes.LastIndexByte(c.line[c.dataStart:c.e], '"')
	if k < 0 {
		return nil
	}
	k += c.dataStart
	v := c.line[k+1 : c.e]
	c.e = k + 1
	return v
}

// decodeTail reads the members after data into env, data included, and
// returns the index of the closing quote of type, where the canonical
// event (the line without its digest) ends. The members after data have
// no '"' or '\' in their values, so they are parsed from the end of the
// line backwards; data is what lies between.
func decodeTail(line []byte, dataStart int, env *envelope) (canonEnd int, problem string) {
	c := tailCursor{line: line, dataStart: dataStart, e: len(line)}
	if !c.cut(litEnd) || c.e-digestLen < dataStart {
		return 0, describeEnvelopeProblem(line)
	}
	sum, ok := parseDigest(line[c.e-digestLen : c.e])
	if !ok {
		return 0, `digest is not "sha256:" followed by 64 lower-case hex digits`
	}
	env.digest = sum
	c.e -= digestLen
	if !c.cut(litDigest) {
		return 0, describeEnvelopeProblem(line)
	}
	canonEnd = c.e + 1 // just past the closing quote of type
	if env.typ = c.quoted(); env.typ == nil || !c.cut(litType) {
		return 0, describeEnvelopeProblem(line)
	}
	if c.e-len(tsLayout) < dataStart {
		return 0, describeEnvelopeProblem(line)
	}
	env.ts = line[c.e-len(tsLayout) : c.e]
	c.e -= len(tsLayout)
	if !c.cut(litTS) {
		return 0, describeEnvelopeProblem(line)
	}
	r := c.e
	for r > dataStart && line[r-1] >= '0' && line[r-1] <= '9' {
		r--
	}
	if env.rev, ok = parseCanonInt(line[r:c.e]); !ok {
		return 0, "rev is not a canonical positive integer"
	}
	c.e = r
	if !c.cut(litRev) {
		return 0, describeEnvelopeProblem(line)
	}
	if env.prev = c.quoted(); env.prev == nil || !c.cut(litPrev) {
		return 0, describeEnvelopeProblem(line)
	}
	if env.id = c.quoted(); env.id == nil || !c.cut(litID) {
		return 0, describeEnvelopeProblem(line)
	}
	if c.e <= dataStart {
		return 0, "data is empty"
	}
	env.data = line[dataStart:c.e]
	return canonEnd, ""
}

// checkEnvelope checks the values decodeTail and decodeHead took apart:
// type, id, prev and ts in their forms, and batch_end not before rev. It
// sets env.time.
func checkEnvelope(env *envelope) (problem string) {
	if err := validEventType(string(env.typ)); err != nil {
		return err.Error()
	}
	if err := validEventID(string(env.id)); err != nil {
		return err.Error()
	}
	if len(env.prev) != 0 {
		if _, ok := parseDigest(env.prev); !ok {
			return `prev is neither "" nor a "sha256:<hex>" digest`
		}
	}
	ts, err := time.Parse(tsLayout, string(env.ts))
	if err != nil || ts.Format(tsLayout) != string(env.ts) {
		return "ts is not RFC 3339 UTC with milliseconds (2006-01-02T15:04:05.000Z)"
	}
	env.time = ts
	if env.batchEnd < env.rev {
		return fmt.Sprintf("batch_end %d is before rev %d", env.batchEnd, env.rev)
	}
	return ""
}

// parseCanonInt parses a canonical JSON integer in 1..2^53-1: digits, no
// sign, no leading zero.
func parseCanonInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 16 || b[0] == '0' {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, v <= maxSafeInt
}

// envelopeFields are the members an envelope must have.
var envelopeFields = map[string]bool{
	"batch_end": true, "data": true, "id": true, "prev": true,
	"rev": true, "ts": true, "type": true, "digest": true,
}

// describeEnvelopeProblem explains why a line is not an envelope in
// canonical layout: not JSON, an unknown, duplicate or missing member, or
// members out of order. Member names are quoted (cut short); values never.
func describeEnvelopeProblem(line []byte) string {
	if !json.Valid(line) {
		return "line is not valid JSON"
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return "line is not a JSON object"
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "line is not a JSON object"
		}
		name, _ := tok.(string)
		if !envelopeFields[name] {
			return "unknown envelope member " + quoteShort(name)
		}
		if seen[name] {
			return "duplicate envelope member " + quoteShort(name)
		}
		seen[name] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil && err != io.EOF {
			return "line is not a JSON object"
		}
	}
	for _, name := range []string{"batch_end", "data", "id", "prev", "rev", "ts", "type", "digest"} {
		if !seen[name] {
			return "missing envelope member " + strconv.Quote(name)
		}
	}
	return layoutProblem
}

const layoutProblem = "envelope is not in canonical layout (members batch_end, data, id, prev, rev, ts, type, digest in that order, no whitespace, values in canonical form)"
