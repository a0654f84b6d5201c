package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/runview"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/internal/shellquote"
	"github.com/obversa/obversa/store"
)

// resumeGrace is how long a steering request waits for the `obversa
// resume` it started: a refusal comes within it (and is answered as
// one); a resume still running after it carries the run on by itself.
const resumeGrace = 1500 * time.Millisecond

// Steered is the answer to POST /api/runs/{id}/approve and …/resume.
type Steered struct {
	// Position and Decision ("allow" or "deny") of an approval.
	Position string `json:"position,omitempty"`
	Decision string `json:"decision,omitempty"`
	// RecordedBy is "worker" when the run's live worker recorded the
	// decision (Request is its request id), "ui" when the server
	// recorded it on a paused run.
	RecordedBy string `json:"recorded_by,omitempty"`
	Request    string `json:"request,omitempty"`
	// Resumed says that `obversa resume` was started to carry the run on;
	// Command is the command the request did (as a person would type it).
	Resumed bool   `json:"resumed"`
	Command string `json:"command"`
}

// steer guards a state-changing request: refused (403) on a read-only
// server, from another origin, or without a valid page token; the run
// must be one the storage lists (404).
func (s *Server) steer(h func(w http.ResponseWriter, r *http.Request, id, dir string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch {
		case s.o.ReadOnly:
			s.fail(w, r, fmt.Errorf("%w: the server is read-only (--read-only)", ErrForbidden))
			return
		case !sameOrigin(r):
			s.fail(w, r, fmt.Errorf("%w: cross-origin request", ErrForbidden))
			return
		case !s.tokens.valid(r.Header.Get(PageTokenHeader)):
			s.fail(w, r, fmt.Errorf("%w: missing or invalid page token (%s); reload the page", ErrForbidden, PageTokenHeader))
			return
		}
		id := r.PathValue("id")
		dir, err := s.st.runDir(r.Context(), id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		h(w, r, id, dir)
	}
}

// approve answers POST /api/runs/{id}/approve {position, decision}: the
// CLI's `obversa approve RUN POSITION` (or --deny). watchdog.Approve
// records the decision under the run's lock at the revision it read, or
// hands it to the live worker; on a paused run `obversa resume
// --position POSITION RUN` is then started to carry it on, as approve
// does in the foreground.
func (s *Server) approve(w http.ResponseWriter, r *http.Request, id, dir string) {
	var req struct {
		Position string `json:"position"`
		Decision string `json:"decision"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("the request body must be {\"position\": …, \"decision\": \"allow\"|\"deny\"}: %v", err))
		return
	}
	if req.Decision != "allow" && req.Decision != "deny" {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("decision %q: use allow or deny", req.Decision))
		return
	}
	deny := req.Decision == "deny"
	cmd := "obversa approve " + shellquote.Quote(dir) + " " + shellquote.Quote(req.Position)
	if deny {
		cmd = "obversa approve --deny " + shellquote.Quote(dir) + " " + shellquote.Quote(req.Position)
	}
	a, err := watchdog.Approve(r.Context(), watchdog.DirRef(dir), req.Position, deny, s.o.ApproveTimeout)
	switch {
	case errors.Is(err, runstate.ErrNotAwaitingApproval):
		httpError(w, http.StatusConflict, err.Error()+s.suggest(r.Context(), id, req.Position))
		return
	case errors.Is(err, watchdog.ErrAlreadyDecided):
		httpError(w, http.StatusConflict, err.Error())
		return
	case err != nil:
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	out := Steered{Position: a.Position, Decision: a.Decision, RecordedBy: "ui", Request: a.Request, Command: cmd}
	if a.Request != "" {
		out.RecordedBy = "worker"
		writeJSON(w, out)
		return
	}
	if code, err := s.startResume(dir, a.Position); err != nil {
		httpError(w, code, fmt.Sprintf("%s was recorded, but carrying the run on failed: %v", a.Decision, err))
		return
	}
	out.Resumed = true
	writeJSON(w, out)
}

// resume answers POST /api/runs/{id}/resume: `obversa resume RUN`.
func (s *Server) resume(w http.ResponseWriter, r *http.Request, id, dir string) {
	if code, err := s.startResume(dir, ""); err != nil {
		httpError(w, code, err.Error())
		return
	}
	writeJSON(w, Steered{Resumed: true, Command: "obversa resume " + shellquote.Quote(dir)})
}

// startResume starts `obversa resume [--position POS] DIR` in its own
// session, so that it carries the run on as its watchdog whether or not
// the server lives on (and `obversa stop` signals it, not the server).
// A resume that ends within resumeGrace with a failure is returned: 409
// for a refusal (exit 2), 500 otherwise, with what it printed.
func (s *Server) startResume(dir, position string) (int, error) {
	args := []string{"resume"}
	if position != "" {
		args = append(args, "--position", position)
	}
	args = append(args, dir)
	out, err := os.CreateTemp("", "obversa-ui-resume-*.log")
	if err != nil {
		return http.StatusInternalServerError, err
	}
	cmd := exec.Command(s.o.Executable, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		os.Remove(out.Name())
		return http.StatusInternalServerError, err
	}
	type exit struct {
		err    error
		output string
	}
	done := make(chan exit, 1)
	go func() {
		err := cmd.Wait()
		b, _ := os.ReadFile(out.Name())
		out.Close()
		os.Remove(out.Name())
		if err != nil {
			s.o.Log.Printf("obversa %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(b))
		}
		done <- exit{err, strings.TrimSpace(string(b))}
	}()
	select {
	case e := <-done:
		var ee *exec.ExitError
		switch {
		case e.err == nil:
			return 0, nil
		case errors.As(e.err, &ee) && ee.ExitCode() == 2:
			return http.StatusConflict, errors.New(e.output)
		case errors.As(e.err, &ee) && (ee.ExitCode() == 3 || ee.ExitCode() == 1 && s.ended(dir)):
			// Carried on, and paused again or ended: the page shows it.
			return 0, nil
		case e.output != "":
			return http.StatusInternalServerError, errors.New(e.output)
		}
		return http.StatusInternalServerError, e.err
	case <-time.After(resumeGrace):
		return 0, nil
	}
}

// ended says whether the run at dir has recorded a terminal result.
func (s *Server) ended(dir string) bool {
	ctx := context.Background()
	rec, err := store.OpenRunDirReadOnly(ctx, dir)
	if err != nil {
		return false
	}
	defer rec.Close()
	st, err := runstate.LoadWithSnapshot(ctx, rec, dir)
	return err == nil && st.Finished() != nil
}

// suggest is " (did you mean …?)" for a position the run does not have
// waiting, naming a position that waits, as the command line does.
func (s *Server) suggest(ctx context.Context, id, position string) string {
	_, st, _, err := s.foldRun(ctx, id)
	if err != nil {
		return ""
	}
	if sg := runview.SuggestPaused(st, position); sg != "" && sg != position {
		return runview.DidYouMean(sg)
	}
	return ""
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSONBytes(w, b)
}
