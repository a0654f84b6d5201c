package ui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/obversa/obversa/store"
)

// ErrNotFound is returned for a run, node or artifact the storage does not
// have, and for any request path the server does not serve: the handlers
// answer it with 404 and never say more about the file system.
var ErrNotFound = errors.New("not found")

// ErrOutside is wrapped when a run directory, or a file the server would
// read in one, resolves (through a symbolic link) to a place outside the
// storage directory. The server refuses it as not found.
var ErrOutside = errors.New("a symbolic link leads out of the storage directory")

// storage is the one storage directory and namespace the server reads.
type storage struct {
	st *store.Store
	// root is the real path (symbolic links resolved) of the namespace's
	// directory: every file the server reads must resolve below it.
	root string
}

func openStorage(dir, namespace string) (*storage, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("no storage directory %s: pass the directory of a run file's storage block with --storage (default .obversa beside the run file)", dir)
	}
	st, err := store.Open(dir, namespace)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(real)
	if err != nil {
		return nil, err
	}
	return &storage{st: st, root: abs}, nil
}

// ids returns the run ids the storage lists.
func (s *storage) ids(ctx context.Context) ([]string, error) { return s.st.ListRuns(ctx) }

// runDir returns the directory of run id, after checking that id is one
// the storage lists (so no request text is ever joined into a path
// unchecked) and that the directory and its record resolve inside the
// storage. Errors wrap ErrNotFound.
func (s *storage) runDir(ctx context.Context, id string) (string, error) {
	if store.ValidID(id) != nil {
		return "", ErrNotFound
	}
	ids, err := s.ids(ctx)
	if err != nil {
		return "", err
	}
	if _, ok := slices.BinarySearch(ids, id); !ok {
		return "", ErrNotFound
	}
	dir := s.st.RunDir(id)
	if err := s.checkRecord(id, dir); err != nil {
		return "", err
	}
	return dir, nil
}

// checkRecord checks that run id's directory dir and its record resolve
// inside the storage. Errors wrap ErrNotFound.
func (s *storage) checkRecord(id, dir string) error {
	for _, p := range []string{dir, filepath.Join(dir, "events.jsonl")} {
		if err := s.inside(p); err != nil {
			return fmt.Errorf("%w: run %s: %w", ErrNotFound, id, err)
		}
	}
	return nil
}

// inside checks that path, with every symbolic link resolved, lies in the
// storage directory. A path that does not exist is inside (nothing can be
// read through it); a link that leaves the storage is ErrOutside.
func (s *storage) inside(path string) error {
	real, err := filepath.EvalSymlinks(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(real)
	if err != nil {
		return err
	}
	if abs != s.root && !strings.HasPrefix(abs, s.root+string(filepath.Separator)) {
		return fmt.Errorf("%w: %s resolves to %s", ErrOutside, path, abs)
	}
	return nil
}

// streamFiles are the files of a run's live output the server reads.
var streamFiles = []string{"stream.jsonl", "stream.jsonl.1"}

// checkRunFiles checks that the files the server reads beside a run's
// record (its live output, its artifacts directory) do not lead out of
// the storage.
func (s *storage) checkRunFiles(dir string) error {
	for _, name := range append(slices.Clone(streamFiles), "artifacts") {
		if err := s.inside(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}
