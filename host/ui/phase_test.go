package ui

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/obversa/obversa/host/runview"
)

// TestAPIRunsRefusesAnUnknownPhase: GET /api/runs?phase= refuses a phase
// that is none (400, naming the valid phases, as `obversa runs --phase`
// does) instead of answering an empty list, and filters by a valid one.
func TestAPIRunsRefusesAnUnknownPhase(t *testing.T) {
	t.Parallel()
	storage := t.TempDir()
	newTestRun(t, storage, "r1")
	_, hs := newTestServer(t, storage, Options{})
	resp, err := http.Get(hs.URL + "/api/runs?phase=running,bogus")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e struct{ Error string }
	if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(b, &e) != nil ||
		!strings.Contains(e.Error, `phase "bogus" is not a phase; use one of [starting running`) {
		t.Errorf("GET /api/runs?phase=running,bogus: %s: %s", resp.Status, b)
	}
	var l struct{ Runs []struct{ Phase string } }
	if err := json.Unmarshal([]byte(get(t, hs.URL+"/api/runs?phase="+strings.Join(runview.Phases, ","))), &l); err != nil || len(l.Runs) != 1 {
		t.Errorf("GET /api/runs?phase=<every phase>: %+v %v", l, err)
	}
}
