package watchdog

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/obversa/obversa/host/executor"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/internal/durable"
	"github.com/obversa/obversa/internal/regfile"
)

// The approval queue of a live run (docs/decisions.md, "One writer"):
// files in <rundir>/requests/, beside the record and never part of it.
//
//	<id>.json    a request an operator left (written to a temporary file,
//	             fsynced, renamed, directory fsynced)
//	<id>.taken   the same request once a worker claimed it (by rename, so
//	             a request is claimed or withdrawn, never both)
//	<id>.answer  the worker's answer, once the decision is durable or
//	             refused
//
// Request ids sort by creation time, so requests are applied in the order
// operators made them.
const requestsDir = "requests"

// maxRequestBytes bounds a request or answer file as read (a request is a
// few hundred bytes; an answer holds one error message).
const maxRequestBytes = 1 << 20

// requestFile is a request as stored.
type requestFile struct {
	ID       string    `json:"id"`
	Position string    `json:"position"`
	Decision string    `json:"decision"`
	PID      int       `json:"pid"`
	At       time.Time `json:"at"`
}

// answerFile is a worker's answer as stored.
type answerFile struct {
	Recorded bool `json:"recorded"`
	// Refusal is "already-decided", "not-awaiting" or "other".
	Refusal string `json:"refusal,omitempty"`
	Message string `json:"message,omitempty"`
}

// Refusal kinds of an answer.
const (
	refusedDecided     = "already-decided"
	refusedNotAwaiting = "not-awaiting"
	refusedOther       = "other"
)

// err returns the refusal as the error the worker found (nil once
// recorded): its message, wrapping the sentinel of its kind.
func (a *answerFile) err() error {
	switch {
	case a.Recorded:
		return nil
	case a.Refusal == refusedDecided:
		return &refusedError{kind: runstate.ErrAlreadyDecided, msg: a.Message}
	case a.Refusal == refusedNotAwaiting:
		return &refusedError{kind: runstate.ErrNotAwaitingApproval, msg: a.Message}
	}
	return &refusedError{msg: a.Message}
}

// refusedError is a request the live worker refused.
type refusedError struct {
	kind error
	msg  string
}

func (e *refusedError) Error() string { return e.msg + " (answered by the run's live worker)" }
func (e *refusedError) Unwrap() error { return e.kind }

// requestQueue is one run's approval queue.
type requestQueue struct{ dir string }

func newRequestQueue(runDir string) *requestQueue {
	return &requestQueue{dir: filepath.Join(runDir, requestsDir)}
}

func (q *requestQueue) path(id, ext string) string { return filepath.Join(q.dir, id+ext) }

// newRequestID returns a request id that sorts by creation time.
func newRequestID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "req-" + now.UTC().Format("20060102T150405.000000000") + "-" + hex.EncodeToString(b[:])
}

// put writes a request durably and returns its id.
func (q *requestQueue) put(position, decision string) (string, error) {
	if err := os.MkdirAll(q.dir, 0o755); err != nil {
		return "", err
	}
	r := requestFile{ID: newRequestID(time.Now()), Position: position, Decision: decision, PID: os.Getpid(), At: time.Now().UTC()}
	b, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	return r.ID, writeFileSync(q.dir, r.ID+".json", b)
}

// writeFileSync writes name in dir atomically and durably: temporary
// file, fsync, rename, fsync of the directory.
func writeFileSync(dir, name string, data []byte) error {
	tmp, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return err
	}
	return durable.SyncDir(dir)
}

// Pending implements executor.Requests: it claims every request not yet
// answered (and takes over those a dead worker claimed), oldest first.
func (q *requestQueue) Pending() ([]executor.ApprovalRequest, error) {
	ents, err := os.ReadDir(q.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	answered := map[string]bool{}
	var ids []string
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, ".answer"):
			answered[strings.TrimSuffix(name, ".answer")] = true
		case strings.HasSuffix(name, ".json") && !strings.HasPrefix(name, "."):
			id := strings.TrimSuffix(name, ".json")
			if os.Rename(q.path(id, ".json"), q.path(id, ".taken")) == nil {
				ids = append(ids, id)
			}
		case strings.HasSuffix(name, ".taken"):
			ids = append(ids, strings.TrimSuffix(name, ".taken"))
		}
	}
	sort.Strings(ids)
	var out []executor.ApprovalRequest
	for _, id := range ids {
		if answered[id] {
			continue
		}
		b, err := regfile.Read(q.path(id, ".taken"), maxRequestBytes)
		if err != nil {
			continue
		}
		var r requestFile
		if err := json.Unmarshal(b, &r); err != nil || r.ID != id {
			q.Answer(id, fmt.Errorf("the request file does not decode: %v", err))
			continue
		}
		out = append(out, executor.ApprovalRequest{ID: id, Position: r.Position, Decision: r.Decision})
	}
	return out, nil
}

// Answer implements executor.Requests.
func (q *requestQueue) Answer(id string, err error) {
	a := answerFile{Recorded: err == nil}
	switch {
	case err == nil:
	case errors.Is(err, runstate.ErrAlreadyDecided):
		a.Refusal, a.Message = refusedDecided, err.Error()
	case errors.Is(err, runstate.ErrNotAwaitingApproval):
		a.Refusal, a.Message = refusedNotAwaiting, err.Error()
	default:
		a.Refusal, a.Message = refusedOther, err.Error()
	}
	b, _ := json.Marshal(a)
	if writeFileSync(q.dir, id+".answer", b) == nil {
		_ = os.Remove(q.path(id, ".taken"))
	}
}

// answer returns a request's answer, if there is one yet, and removes it.
func (q *requestQueue) answer(id string) (*answerFile, bool) {
	b, err := regfile.Read(q.path(id, ".answer"), maxRequestBytes)
	if err != nil {
		return nil, false
	}
	var a answerFile
	if json.Unmarshal(b, &a) != nil {
		return nil, false
	}
	_ = os.Remove(q.path(id, ".answer"))
	return &a, true
}

// withdraw takes back a request no worker claimed; false when a worker
// has claimed it already.
func (q *requestQueue) withdraw(id string) bool {
	return os.Remove(q.path(id, ".json")) == nil
}

// drop removes what is left of a request a dead worker claimed and never
// answered; the caller owns the run, so no worker can be reading it.
func (q *requestQueue) drop(id string) {
	_ = os.Remove(q.path(id, ".taken"))
}
