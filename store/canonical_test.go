package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

// TestDigestIsOverCanonicalEnvelope recomputes an event's digest the long
// way: the envelope without digest as a JSON object, canonicalised by the
// library, hashed.
func TestDigestIsOverCanonicalEnvelope(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	mustAppend(t, r.events, 0,
		NewEvent{Type: "a", Data: map[string]any{"z": "é\n", "a": []int{1, 2}}},
		NewEvent{ID: "custom:id/1", Type: "b:c", Data: 1.5})
	lines := strings.SplitAfter(string(readEvents(t, eventsPath(r))), "\n")
	for i, e := range readAll(t, r.events) {
		env := map[string]any{
			"batch_end": e.BatchEnd, "data": e.Data, "id": e.ID, "prev": e.Prev,
			"rev": e.Rev, "ts": e.TS.Format("2006-01-02T15:04:05.000Z"), "type": e.Type,
		}
		raw, err := json.Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		canon, err := jcs.Transform(raw)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(canon)
		if want := "sha256:" + hex.EncodeToString(sum[:]); e.Digest != want {
			t.Errorf("rev %d: digest %s, recomputed %s", e.Rev, e.Digest, want)
		}
		// The stored line is that canonical text with the digest appended.
		prefix := string(canon[:len(canon)-1])
		if !strings.HasPrefix(lines[i], prefix+`,"digest":"`) {
			t.Errorf("rev %d: line %s does not start with the canonical envelope %s", e.Rev, lines[i], prefix)
		}
	}
}

// TestMarshalRefusesNaNAndInf: event data holding NaN or ±Inf, which JSON
// cannot represent, is refused when it is marshalled.
func TestMarshalRefusesNaNAndInf(t *testing.T) {
	t.Parallel()
	for _, bits := range []string{"7fffffffffffffff", "7ff0000000000000"} { // NaN, Infinity
		u, _ := strconv.ParseUint(bits, 16, 64)
		if _, _, err := marshalData(math.Float64frombits(u), newEncoder(), false); err == nil {
			t.Errorf("%s: marshalled, want an error", bits)
		}
	}
}
