package store

import (
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
