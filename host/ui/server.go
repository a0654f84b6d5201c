package ui

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/obversa/obversa/internal/bidi"
)

//go:embed assets
var assets embed.FS

// Options configure a Server.
type Options struct {
	// Storage is the storage directory whose runs the server shows, as
	// given on the command line (commands on the page name run
	// directories under it the same way).
	Storage string
	// Namespace is the namespace of the runs (default "default").
	Namespace string
	// Token, when set, must be carried by every request: as
	// "Authorization: Bearer TOKEN", or as ?token=TOKEN once, which sets
	// a cookie. `obversa ui` requires one for a non-loopback listen
	// address; without one the server answers only requests whose Host
	// is a loopback name.
	Token string
	// ReadOnly hides and refuses approve, deny and resume.
	ReadOnly bool
	// Executable is the obversa binary that carries a run on (`obversa
	// resume`); it must be set unless ReadOnly.
	Executable string
	// ApproveTimeout bounds how long an approval waits for a live
	// worker's answer (0: watchdog.DefaultApproveTimeout).
	ApproveTimeout time.Duration
	// Log receives what the server cannot say in a response (a resume
	// that failed after its request returned); nil discards it.
	Log *log.Logger
}

// Server is the run browser's HTTP handler. Close stops its followers.
type Server struct {
	o      Options
	st     *storage
	pages  *template.Template
	static http.Handler
	tokens *pageTokens
	mux    *http.ServeMux
	runs   *runsWatcher

	mu        sync.Mutex
	followers map[string]*follower
	started   int // followers ever started, for tests of sharing
	ctx       context.Context
	cancel    context.CancelFunc
}

// New returns a Server for the storage directory o.Storage. Errors: the
// storage directory does not exist or cannot be opened; an Executable is
// missing on a server that steers.
func New(o Options) (*Server, error) {
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if !o.ReadOnly && o.Executable == "" {
		return nil, errors.New("ui: Options.Executable is needed to resume runs (or set ReadOnly)")
	}
	if o.Log == nil {
		o.Log = log.New(discard{}, "", 0)
	}
	st, err := openStorage(o.Storage, o.Namespace)
	if err != nil {
		return nil, err
	}
	pages, err := template.ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, err
	}
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{o: o, st: st, pages: pages, static: http.FileServerFS(sub), tokens: newPageTokens(),
		followers: map[string]*follower{}, ctx: ctx, cancel: cancel}
	s.runs = newRunsWatcher(s)
	s.routes()
	return s, nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Close stops every follower and the runs poller; live pages see their
// event streams end.
func (s *Server) Close() error {
	s.cancel()
	return nil
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", s.page("runs.html"))
	m.HandleFunc("GET /runs/{id}", s.runPage)
	m.HandleFunc("GET /assets/{file...}", s.asset)
	m.HandleFunc("GET /api/runs", s.apiRuns)
	m.HandleFunc("GET /api/runs/{id}", s.apiRun)
	m.HandleFunc("GET /api/runs/{id}/nodes/{node}", s.apiNode)
	m.HandleFunc("GET /api/runs/{id}/node", s.apiNode)
	m.HandleFunc("GET /api/runs/{id}/artifacts/{digest}", s.apiArtifact)
	m.HandleFunc("GET /api/live/runs", s.liveRuns)
	m.HandleFunc("GET /api/live/runs/{id}", s.liveRun)
	m.HandleFunc("POST /api/runs/{id}/approve", s.steer(s.approve))
	m.HandleFunc("POST /api/runs/{id}/resume", s.steer(s.resume))
	s.mux = m
}

// ServeHTTP checks the access token (or, without one, that the request
// names a loopback host), refuses any path that is not clean with 404,
// and routes the rest.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	if s.o.Token != "" {
		ok, fromQuery := accessToken(r, s.o.Token)
		if !ok {
			httpError(w, http.StatusUnauthorized, "this server needs its access token: open the address `obversa ui` printed (?token=…) or send Authorization: Bearer TOKEN")
			return
		}
		if fromQuery && r.Method == http.MethodGet {
			http.SetCookie(w, &http.Cookie{Name: AccessCookie, Value: s.o.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			u := *r.URL
			q := u.Query()
			q.Del("token")
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
	} else if !loopbackHost(r.Host) {
		httpError(w, http.StatusForbidden, fmt.Sprintf("host %q is not a loopback name; this server answers only http://127.0.0.1 or http://localhost (give it --token to serve other hosts)", r.Host))
		return
	}
	if !cleanPath(r.URL) {
		http.NotFound(w, r)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// pageData is what the page templates get.
type pageData struct {
	PageToken string
	// Escaped are the code points the page shows as \u202e-style
	// escapes in the run's text, as the command line does (bidi.Spec).
	Escaped  string
	ReadOnly bool
	RunID    string
}

func (s *Server) page(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s.render(w, name, pageData{}) }
}

func (s *Server) render(w http.ResponseWriter, name string, d pageData) {
	d.PageToken, d.ReadOnly, d.Escaped = s.tokens.mint(), s.o.ReadOnly, bidi.Spec()
	var b strings.Builder
	if err := s.pages.ExecuteTemplate(&b, name, d); err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(b.String()))
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := s.st.runDir(r.Context(), id); err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, "run.html", pageData{RunID: id})
}

// asset serves the embedded files (never the file system); the HTML
// templates are only served rendered.
func (s *Server) asset(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, ".html") || strings.HasSuffix(r.URL.Path, "/") {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	r2 := r.Clone(r.Context())
	r2.URL.Path = strings.TrimPrefix(r.URL.Path, "/assets")
	s.static.ServeHTTP(w, r2)
}

// fail answers an error: 404 for ErrNotFound (saying no more), 403 for
// ErrForbidden, 500 otherwise.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, ErrNotFound):
		http.NotFound(w, r)
	case errors.Is(err, ErrForbidden):
		httpError(w, http.StatusForbidden, err.Error())
	default:
		httpError(w, http.StatusInternalServerError, err.Error())
	}
}

// httpError answers {"error": message} with status code.
func httpError(w http.ResponseWriter, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": message})
}
