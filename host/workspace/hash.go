package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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
	known bool        // typ is valid; otherwise hashing starts with Lstat
}

// hashBufSize is each worker's copy buffer, bytes.
const hashBufSize = 64 << 10

// maxTypeRaces bounds how often one path may change type (file, symlink,
// gone) under a single snapshot before Take gives up.
const maxTypeRaces = 3

// errTypeChanged reports that a path's type changed between the listing
// (or the Lstat) and the open; hashing that path starts again.
var errTypeChanged = errors.New("file type changed while hashing")

// hashWorkers is how many files are hashed at once: a few per CPU, because
// small files spend their time in open/read/close rather than SHA-256.
func hashWorkers() int { _ = runtime.NumCPU; return 1 }

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
			buf := make([]byte, hashBufSize)
			for !stopped.Load() {
				i := int(next.Add(1) - 1)
				if i >= len(cands) {
					return
				}
				if err := ctx.Err(); err != nil {
					fail(err)
					return
				}
				e, ok, err := hashPath(base, cands[i], buf)
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

// hashPath hashes one candidate, retrying when its type changes under it.
func hashPath(base string, c candidate, buf []byte) (Entry, bool, error) {
	full := filepath.Join(base, filepath.FromSlash(c.rel))
	for range maxTypeRaces {
		e, ok, err := hashOnce(full, c, buf)
		if !errors.Is(err, errTypeChanged) {
			return e, ok, err
		}
		c.known = false
	}
	return Entry{}, false, fmt.Errorf("%s: %w %d times", c.rel, errTypeChanged, maxTypeRaces)
}

// hashOnce hashes full as a regular file or a symlink. ok is false when
// the path is gone or is another kind of file.
func hashOnce(full string, c candidate, buf []byte) (Entry, bool, error) {
	typ := c.typ
	if !c.known {
		fi, err := os.Lstat(full)
		if err != nil {
			if vanished(err) {
				return Entry{}, false, nil
			}
			return Entry{}, false, err
		}
		typ = fi.Mode().Type()
	}
	switch {
	case typ == fs.ModeSymlink:
		return hashLink(full, c.rel)
	case typ.IsRegular():
		return hashFile(full, c.rel, buf)
	default:
		return Entry{}, false, nil
	}
}

// hashLink records a symlink by its target string.
func hashLink(full, rel string) (Entry, bool, error) {
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
	sum := sha256.Sum256([]byte(target))
	return Entry{Path: rel, Mode: ModeSymlink, Size: int64(len(target)), SHA256: hex.EncodeToString(sum[:])}, true, nil
}

// hashFile streams a regular file through SHA-256. The file is opened
// without following a final symlink and without blocking on a FIFO, and its
// type is checked on the open descriptor, so a path swapped for something
// else after the listing is never read as a file.
func hashFile(full, rel string, buf []byte) (Entry, bool, error) {
	f, err := openNoFollow(full)
	switch {
	case err == nil:
	case vanished(err):
		return Entry{}, false, nil
	case isSymlinkRefused(err):
		return Entry{}, false, errTypeChanged
	default:
		return Entry{}, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Entry{}, false, err
	}
	if !fi.Mode().IsRegular() {
		return Entry{}, false, errTypeChanged
	}
	h := sha256.New()
	// Hide File.WriteTo so that io.CopyBuffer uses buf rather than
	// allocating a buffer per file.
	n, err := io.CopyBuffer(h, struct{ io.Reader }{f}, buf)
	if err != nil {
		return Entry{}, false, fmt.Errorf("read %s: %w", full, err)
	}
	return Entry{Path: rel, Mode: unixMode(fi.Mode()), Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, true, nil
}

// unixMode converts a regular file's fs.FileMode to st_mode bits.
func unixMode(m fs.FileMode) uint32 {
	mode := ModeRegular | uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
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
