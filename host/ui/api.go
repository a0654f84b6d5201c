package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/runview"
	"github.com/obversa/obversa/store"
)

// foldRun folds the record of run id read-only (the shared fold) and
// says whether a live watchdog holds it. Errors wrap ErrNotFound for a
// run the storage does not list.
func (s *Server) foldRun(ctx context.Context, id string) (string, *runstate.State, bool, error) {
	dir, err := s.st.runDir(ctx, id)
	if err != nil {
		return "", nil, false, err
	}
	rec, err := store.OpenRunDirReadOnly(ctx, dir)
	if err != nil {
		return "", nil, false, err
	}
	defer rec.Close()
	st, err := runstate.LoadWithSnapshot(ctx, rec, dir)
	if err != nil {
		return "", nil, false, fmt.Errorf("%s: %w", dir, err)
	}
	return dir, st, holderAlive(ctx, rec), nil
}

// apiRun answers GET /api/runs/{id}: the RunView.
func (s *Server) apiRun(w http.ResponseWriter, r *http.Request) {
	dir, st, live, err := s.foldRun(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeRedacted(w, st, buildView(st, dir, time.Now(), live, s.o.ReadOnly))
}

// apiNode answers GET /api/runs/{id}/nodes/{node} and, for a name with
// a slash (a loop's member config/1/review, a for_each instance: the
// guard refuses an encoded slash in a path), GET
// /api/runs/{id}/node?name=NAME: one node in full, as `obversa show RUN
// NODE`, a result kept as an artifact read back.
func (s *Server) apiNode(w http.ResponseWriter, r *http.Request) {
	dir, st, live, err := s.foldRun(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	id := r.PathValue("node")
	if id == "" {
		id = r.URL.Query().Get("name")
	}
	n, ok := runview.NodeOf(st, id, time.Now(), live)
	if !ok {
		s.fail(w, r, ErrNotFound)
		return
	}
	if a := runview.ResultArtifact(st.Graph(), id); a != nil {
		b, err := s.readArtifact(r.Context(), dir, store.ArtifactRef(*a))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		n.SetResult(b)
	}
	writeRedacted(w, st, n)
}

// apiArtifact answers GET /api/runs/{id}/artifacts/{digest}: the bytes of
// an artifact one of the run's nodes holds (none other), re-hashed by the
// store, as text when it is text and as a download otherwise — never as
// a page of this origin.
func (s *Server) apiArtifact(w http.ResponseWriter, r *http.Request) {
	dir, st, _, err := s.foldRun(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	digest := r.PathValue("digest")
	var ref *store.ArtifactRef
	for _, n := range st.Graph().Nodes() {
		if a := n.ResultArtifact; a != nil && a.Digest == digest {
			x := store.ArtifactRef(*a)
			ref = &x
		}
	}
	if ref == nil {
		s.fail(w, r, ErrNotFound)
		return
	}
	b, err := s.readArtifact(r.Context(), dir, *ref)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	b = redactorOf(st).Redact(b)
	mt, _, _ := mime.ParseMediaType(ref.MediaType)
	if strings.HasPrefix(mt, "text/") || mt == "application/json" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="`+strings.TrimPrefix(digest, "sha256:")+`"`)
	}
	_, _ = w.Write(b)
}

// readArtifact reads an artifact after checking that its file does not
// lead out of the storage.
func (s *Server) readArtifact(ctx context.Context, dir string, ref store.ArtifactRef) ([]byte, error) {
	hex, ok := strings.CutPrefix(ref.Digest, "sha256:")
	if !ok || len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
		return nil, ErrNotFound
	}
	if err := s.st.inside(filepath.Join(dir, "artifacts", "sha256", hex)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	rec, err := store.OpenRunDirReadOnly(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer rec.Close()
	return rec.ReadArtifact(ctx, ref)
}

// liveRun answers GET /api/live/runs/{id}: the run's server-sent events,
// from the one follower of the run that every page shares.
func (s *Server) liveRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	dir, err := s.st.runDir(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	f, sub, initial, err := s.subscribe(r.Context(), id, dir)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer s.unsubscribe(f, sub)
	s.serveSSE(w, r, initial, sub)
}

// writeRedacted writes v as JSON with the run's known secrets redacted.
func writeRedacted(w http.ResponseWriter, st *runstate.State, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSONBytes(w, redactorOf(st).Redact(b))
}
