package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
)

// candidate is a path a provider listed, to be hashed.
type candidate struct {
	rel   string      // slash-separated, relative to the root
	typ   fs.FileMode // type bits from the directory listing, when known
	known bool        // typ is valid; otherwise hashing opens the path to learn it
}

// hashBufSize is each worker's copy buffer, bytes.
const hashBufSize = 64 << 10

// maxTypeRaces bounds how often one path may change type (file, symlink,
// gone) under a single snapshot before Take gives up.
const maxTypeRaces = 3

// errTypeChanged reports that a path found to be a symlink was not one a
// moment later; hashing that path starts again.
var errTypeChanged = errors.New("file type changed while hashing")

// errNotRegular reports that an opened path is not a regular file (a
// directory, such as a submodule, a FIFO, a device): it is left out.
var errNotRegular = errors.New("not a regular file")

// hashWorkers is how many files are hashed at once: a few per CPU, because
// small files spend their time in open/read/close rather than SHA-256.
func hashWorkers() int { return min(max(2*runtime.GOMAXPROCS(0), 2), 16) }

// hasher is one worker's reusable state.
type hasher struct {
	buf []byte
	h   hash.Hash
	sum [sha256.Size]byte
}

func newHasher() *hasher { return &hasher{buf: make([]byte, hashBufSize), h: sha256.New()} }

// hashAll hashes every candidate under base and returns the entries sorted
// by path. Candidates that vanished or are not regular files or symlinks are
// left out.
func hashAll(ctx context.Context, base string, cands []candidate) ([]Entry, error) {
	entries := make([]Entry, len(cands))
	keep := make([]bool, len(cands))
	var (
		next    atomic.Int64
		stopped atomic.Bool
		errOnce sync.Once
		first   error
		wg      sync.WaitGroup
	)
	fail := func(err error) {
		errOnce.Do(func() { first = err })
		stopped.Store(true)
	}
	for range min(hashWorkers(), len(cands)) {
		wg.Go(func() {
			w := newHasher()
			for !stopped.Load() {
				i := int(next.Add(1) - 1)
				if i >= len(cands) {
					return
				}
				if err := ctx.Err(); err != nil {
					fail(err)
					return
				}
				e, ok, err := w.path(base, cands[i])
				if err != nil {
					fail(err)
					return
				}
				entries[i], keep[i] = e, ok
			}
		})
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	out := entries[:0]
	for i, e := range entries {
		if keep[i] {
			out = append(out, e)
		}
	}
	sortEntries(out)
	return out, nil
}

// path hashes one candidate, retrying when its type changes under it.
func (w *hasher) path(base string, c candidate) (Entry, bool, error) {
	full := filepath.Join(base, filepath.FromSlash(c.rel))
	for range maxTypeRaces {
		e, ok, err := w.once(full, c)
		if !errors.Is(err, errTypeChanged) {
			return e, ok, err
		}
		c.known = false
	}
	return Entry{}, false, fmt.Errorf("%s: %w %d times", c.rel, errTypeChanged, maxTypeRaces)
}

// once hashes full as a regular file or a symlink. ok is false when the
// path is gone or is another kind of file. A path of unknown type is opened
// as a file first (no Lstat): O_NOFOLLOW refuses a symlink, and the open
// descriptor tells any other type.
func (w *hasher) once(full string, c candidate) (Entry, bool, error) {
	if c.known {
		switch {
		case c.typ == fs.ModeSymlink:
			return w.link(full, c.rel)
		case !c.typ.IsRegular():
			return Entry{}, false, nil
		}
	}
	e, ok, err := w.file(full, c.rel)
	if err == nil {
		return e, ok, nil
	}
	if isSymlinkRefused(err) {
		return w.link(full, c.rel)
	}
	// Opening a socket fails (ENXIO); whatever it is, a path that is not a
	// regular file any more is left out rather than failing the snapshot.
	if fi, lerr := os.Lstat(full); lerr == nil && !fi.Mode().IsRegular() && fi.Mode().Type() != fs.ModeSymlink {
		return Entry{}, false, nil
	}
	return Entry{}, false, err
}

// link records a symlink by its target string.
func (w *hasher) link(full, rel string) (Entry, bool, error) {
	target, err := os.Readlink(full)
	switch {
	case err == nil:
	case vanished(err):
		return Entry{}, false, nil
	case errors.Is(err, syscall.EINVAL): // no longer a symlink
		return Entry{}, false, errTypeChanged
	default:
		return Entry{}, false, err
	}
	w.h.Reset()
	io.WriteString(w.h, target)
	return Entry{Path: rel, Mode: ModeSymlink, Size: int64(len(target)), SHA256: hex.EncodeToString(w.h.Sum(w.sum[:0]))}, true, nil
}

// file streams a regular file through SHA-256 (readRegular: no symlink
// followed, no FIFO blocked on, the type checked on the open descriptor).
// A symlink is returned as readRegular's error, for the caller to record.
func (w *hasher) file(full, rel string) (Entry, bool, error) {
	w.h.Reset()
	perm, n, err := readRegular(full, w.h, w.buf)
	switch {
	case err == nil:
	case vanished(err), errors.Is(err, errNotRegular):
		return Entry{}, false, nil
	default:
		return Entry{}, false, err
	}
	return Entry{Path: rel, Mode: ModeRegular | perm, Size: n, SHA256: hex.EncodeToString(w.h.Sum(w.sum[:0]))}, true, nil
}

// vanished reports whether err means the path is gone: removed, or a
// directory on the way became a file.
func vanished(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// manifestHeader starts the canonical manifest (package documentation).
const manifestHeader = "obversa-workspace-manifest-v1\n"

// manifestDigest returns "sha256:<hex>" over the canonical manifest of m,
// which must be sorted.
func manifestDigest(m []Entry) string {
	h := sha256.New()
	io.WriteString(h, manifestHeader)
	line := make([]byte, 0, 256)
	for _, e := range m {
		line = append(line[:0], e.Path...)
		line = append(line, 0)
		line = strconv.AppendUint(line, uint64(e.Mode), 8)
		line = append(line, ' ')
		line = strconv.AppendInt(line, e.Size, 10)
		line = append(line, ' ')
		line = append(line, e.SHA256...)
		line = append(line, '\n')
		h.Write(line)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
