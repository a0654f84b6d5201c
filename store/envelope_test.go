package store

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func validLine(t *testing.T) string {
	t.Helper()
	ts := time.Date(2026, 1, 2, 15, 4, 5, 123e6, time.UTC)
	line, _ := encodeLine(nil, 2, 3, "ev-2", "graph:node-completed", ts, []byte(`{"a":[1,"x"],"b":null}`), digestString([32]byte{7}))
	return strings.TrimSuffix(string(line), "\n")
}

// redigest recomputes the digest of a (modified) line so that the decoder
// meets the modification itself, not a digest mismatch.
func redigest(line string) string {
	k := strings.LastIndex(line, `,"digest":"`)
	if k < 0 {
		return line
	}
	body := line[:k] + "}"
	return line[:k] + `,"digest":"` + digestString(sha256Sum([]byte(body))) + `"}`
}

func TestDecodeLine(t *testing.T) {
	t.Parallel()
	good := validLine(t)
	env, problem := decodeLine([]byte(good), true)
	if problem != "" {
		t.Fatalf("valid line: %s", problem)
	}
	e := env.event()
	if e.Rev != 2 || e.BatchEnd != 3 || e.ID != "ev-2" || e.Type != "graph:node-completed" || string(e.Data) != `{"a":[1,"x"],"b":null}` ||
		!e.TS.Equal(time.Date(2026, 1, 2, 15, 4, 5, 123e6, time.UTC)) || e.Prev != digestString([32]byte{7}) {
		t.Fatalf("decoded %+v", e)
	}
	rep := func(old, new string) string { return redigest(strings.Replace(good, old, new, 1)) }
	tests := []struct {
		name, line, want string // want: a word of the problem
	}{
		{"not JSON", `{"batch_end":`, "not valid JSON"},
		{"empty", ``, "not valid JSON"},
		{"array", `[1]`, "not a JSON object"},
		{"unknown member", rep(`,"data":`, `,"extra":1,"data":`), `unknown envelope member "extra"`},
		{"duplicate member", rep(`,"id":"ev-2"`, `,"id":"ev-2","id":"ev-2"`), `duplicate envelope member "id"`},
		{"missing member", rep(`,"prev":"`+digestString([32]byte{7})+`"`, ``), `missing envelope member "prev"`},
		{"members reordered", rep(`{"batch_end":3,"data":{"a":[1,"x"],"b":null}`, `{"data":{"a":[1,"x"],"b":null},"batch_end":3`), "canonical layout"},
		{"whitespace", rep(`"rev":2`, `"rev": 2`), "canonical"},
		{"data not canonical", rep(`{"a":[1,"x"],"b":null}`, `{"b":null,"a":[1,"x"]}`), "canonical form"},
		{"data number not canonical", rep(`[1,"x"]`, `[1.0,"x"]`), "canonical form"},
		{"rev with leading zero", rep(`"rev":2`, `"rev":02`), "rev"},
		{"rev zero", rep(`"rev":2`, `"rev":0`), "rev"},
		{"rev too large", rep(`"rev":2`, `"rev":9007199254740992`), "rev"},
		{"batch_end before rev", rep(`"batch_end":3`, `"batch_end":1`), "batch_end 1 is before rev 2"},
		{"ts without milliseconds", rep(`.123Z`, `Z`), "canonical"},
		{"ts with offset", rep(`15:04:05.123Z`, `15:04:05.123+01:00`), "canonical"},
		{"ts not a date", rep(`2026-01-02`, `2026-13-02`), "ts"},
		{"type invalid", rep(`"type":"graph:node-completed"`, `"type":"graph node"`), "type"},
		{"id invalid", rep(`"id":"ev-2"`, `"id":"ev 2"`), "id"},
		{"prev malformed", rep(`"prev":"sha256:07`, `"prev":"sha256:0`), "prev"},
		{"digest upper-case", strings.Replace(good, `"digest":"sha256:`, `"digest":"SHA256:`, 1), "digest"},
		{"digest wrong", good[:len(good)-3] + `0"}`, "digest does not match"},
		{"data edited", strings.Replace(good, `"x"`, `"y"`, 1), "digest does not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, problem := decodeLine([]byte(tt.line), true)
			if !strings.Contains(problem, tt.want) {
				t.Fatalf("decodeLine(%s)\nproblem %q, want it to mention %q", tt.line, problem, tt.want)
			}
		})
	}
}

// TestAppendTSIsTheLayout holds appendTS to time.Time.AppendFormat with
// tsLayout in UTC, on times in any zone, at the edges of the fields and of
// the years the direct path writes.
func TestAppendTSIsTheLayout(t *testing.T) {
	zone := time.FixedZone("x", -(9*3600 + 30*60))
	times := []time.Time{time.Time{}, time.Unix(0, 0), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 12, 1, 18, 23, 44, 331_000_001, zone), time.Date(1999, 2, 28, 0, 0, 0, 999_999, time.UTC)}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		times = append(times, time.Unix(r.Int64N(300_000_000_000)-62_000_000_000, r.Int64N(1e9)).In(zone))
	}
	for _, ts := range times {
		want := string(ts.UTC().AppendFormat([]byte("x"), tsLayout))
		if got := string(appendTS([]byte("x"), ts)); got != want {
			t.Fatalf("appendTS(%v) = %s, want %s", ts, got, want)
		}
	}
}
