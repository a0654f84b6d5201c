package runstate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"unsafe"

	"github.com/obversa/obversa/internal/regfile"
	"github.com/obversa/obversa/store"
)

// SaveSnapshot writes s's fold snapshot to <dir>/fold.snapshot, replacing
// the one there: a temporary file in dir, written, fsynced and renamed
// over it, so a crash leaves the old snapshot or the new one, never part
// of one (a temporary file left by a crash is never read, and the next
// save removes it). s must be a fold of
// the record in dir (Load, LoadWithSnapshot, CatchUp; ErrFolded
// otherwise). Errors: EncodeSnapshot's and the file system's, naming the
// path.
func SaveSnapshot(dir string, s *State) error {
	b, err := s.EncodeSnapshot()
	if err != nil {
		return err
	}
	// A temporary file left by a writer that died is never read; the
	// run has one writer, so any there now is such a one.
	if old, _ := filepath.Glob(filepath.Join(dir, SnapshotFile+".tmp-*")); len(old) > 0 {
		for _, p := range old {
			os.Remove(p)
		}
	}
	f, err := os.CreateTemp(dir, SnapshotFile+".tmp-*")
	if err != nil {
		return fmt.Errorf("fold snapshot: %w", err)
	}
	tmp := f.Name()
	err = f.Chmod(0o644) // as readable as the record it folds
	if err == nil {
		_, err = f.Write(b)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, SnapshotFile))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("fold snapshot %s: %w", filepath.Join(dir, SnapshotFile), err)
	}
	return nil
}

// LoadWithSnapshot folds the record r, the run in directory dir, like
// Load, starting from the fold snapshot in dir when it is usable: written
// by this fold, undamaged, and of a prefix of this record (the record's
// digest at the snapshot's revision matches). Only the events after the
// snapshot are folded. A snapshot that is missing or unusable for any
// reason is ignored and the whole record folded: the snapshot is a cache,
// it never changes what a reader sees. Errors: Load's.
func LoadWithSnapshot(ctx context.Context, r Reader, dir string) (*State, error) {
	if dir != "" {
		if s, err := fromSnapshot(ctx, r, dir); err == nil {
			return s, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return Load(ctx, r)
}

// Ahead is a fold snapshot read and restored in the background while its
// reader opens the record (RestoreAhead): the two read different files,
// and on a run of 100 000 events each takes tens of milliseconds. It
// serves one Load.
type Ahead struct {
	dir  string
	done chan struct{}
	h    snapshotHeader
	s    *State
	err  error
}

// RestoreAhead starts reading and restoring the fold snapshot in dir on a
// goroutine of its own, for Ahead.Load. It never fails: a snapshot that is
// missing or unusable is found out by Load, which then folds the whole
// record.
func RestoreAhead(dir string) *Ahead {
	a := &Ahead{dir: dir, done: make(chan struct{})}
	go func() {
		defer close(a.done)
		a.h, a.s, a.err = restoreSnapshot(dir)
	}()
	return a
}

// Load is LoadWithSnapshot(ctx, r, dir) with dir's snapshot restored
// ahead: it waits for the restore (or ctx), ties the restored State to r
// as LoadWithSnapshot does, and folds r's events after it; a snapshot
// that was unusable, or of another directory than dir, is ignored and
// the whole record folded. A second Load of the same Ahead folds the
// whole record. Errors: Load's, or ctx's.
func (a *Ahead) Load(ctx context.Context, r Reader, dir string) (*State, error) {
	select {
	case <-a.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s := a.s
	a.s = nil
	if a.err == nil && s != nil && filepath.Clean(dir) == filepath.Clean(a.dir) {
		if s, err := s.follow(ctx, r, a.h); err == nil {
			return s, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return Load(ctx, r)
}

// errNoSnapshot is returned by fromSnapshot and CheckSnapshot when dir
// holds no fold snapshot.
var errNoSnapshot = errors.New("no fold snapshot")

// readSnapshot reads and parses dir's fold snapshot. It is read as files
// a user names are (internal/regfile): only a regular file, opened without
// blocking, since a FIFO in its place would hold every reader (and the
// worker as it ends) in open for good, and a device behind a symlink
// (/dev/zero) would never end. Anything else is ErrSnapshotInvalid, which
// readers ignore and verify reports.
func readSnapshot(dir string) (snapshotHeader, []byte, error) {
	path := filepath.Join(dir, SnapshotFile)
	b, err := regfile.Read(path, maxSnapshotBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return snapshotHeader{}, nil, errNoSnapshot
	}
	if err != nil {
		return snapshotHeader{}, nil, fmt.Errorf("%w: %s: %w", ErrSnapshotInvalid, path, err)
	}
	return parseSnapshot(b)
}

// maxSnapshotBytes bounds a fold snapshot read (bytes): far past any
// record's fold (a 104 000-event record's is about 10 MB), so only a file
// that is not a snapshot reaches it.
const maxSnapshotBytes = 1 << 32

// fromSnapshot restores dir's snapshot and folds r's events after it.
func fromSnapshot(ctx context.Context, r Reader, dir string) (*State, error) {
	h, s, err := restoreSnapshot(dir)
	if err != nil {
		return nil, err
	}
	return s.follow(ctx, r, h)
}

// restoreSnapshot reads dir's snapshot and restores the State it holds,
// not yet tied to any record (follow does that). The file is mapped, not
// read (regfile.Map): most of its bytes are decoded once and dropped,
// and a read would first copy them all into pages of fresh memory, each
// a page fault — on a 7 MB snapshot a tenth of a status's faults. It is
// checked as readSnapshot checks it; a file cut shorter while it is
// mapped (never done by the worker, which renames a new one over it)
// faults, which is an unusable snapshot here, not a crash.
func restoreSnapshot(dir string) (h snapshotHeader, s *State, err error) {
	path := filepath.Join(dir, SnapshotFile)
	b, unmap, err := regfile.Map(path, maxSnapshotBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return h, nil, errNoSnapshot
	}
	if err != nil {
		return h, nil, fmt.Errorf("%w: %s: %w", ErrSnapshotInvalid, path, err)
	}
	defer unmap()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			if f, ok := p.(interface{ Addr() uintptr }); !ok || !within(b, f.Addr()) {
				panic(p)
			}
			s, err = nil, fmt.Errorf("%w: %s changed while it was read", ErrSnapshotInvalid, path)
		}
	}()
	h, payload, err := parseSnapshot(b)
	if err != nil {
		return h, nil, err
	}
	s = New()
	if err := s.restorePayload(payload, true); err != nil {
		return h, nil, err
	}
	return h, s, nil
}

// within reports whether addr is the address of one of b's bytes.
func within(b []byte, addr uintptr) bool {
	if len(b) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(&b[0]))
	return addr >= start && addr-start < uintptr(len(b))
}

// follow ties s, restored from the snapshot h, to the record r — r's
// event at h.Rev must be the one the snapshot folded — and folds r's
// events after it.
func (s *State) follow(ctx context.Context, r Reader, h snapshotHeader) (*State, error) {
	first := true
	err := r.Read(ctx, h.Rev, func(e store.Event) error {
		if first {
			first = false
			if e.Rev != h.Rev || e.Digest != h.Digest {
				return fmt.Errorf("%w: the record's event %d is not the one it folded", ErrSnapshotInvalid, h.Rev)
			}
			s.rev, s.digest, s.lastAt = e.Rev, e.Digest, e.TS
			return nil
		}
		return s.Apply(e)
	})
	if err == nil && first {
		err = fmt.Errorf("%w: the record ends before event %d", ErrSnapshotInvalid, h.Rev)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// CheckSnapshot checks the fold snapshot in dir, the directory of record
// r, against a full fold of r up to the snapshot's revision, as `obversa
// verify` does. It returns nil when dir holds none or it is exactly what
// the fold encodes; an error wrapping ErrSnapshotStale for one written by
// another version (ignored by readers); an error wrapping
// ErrSnapshotInvalid for one that is damaged, belongs to another record
// (or to events no longer in it) or differs from the fold; or the
// record's read and fold errors.
func CheckSnapshot(ctx context.Context, r Reader, dir string) error {
	h, payload, err := readSnapshot(dir)
	if errors.Is(err, errNoSnapshot) {
		return nil
	}
	if err != nil {
		return err
	}
	s := New()
	err = r.Read(ctx, 1, func(e store.Event) error {
		if err := s.Apply(e); err != nil {
			return err
		}
		if e.Rev == h.Rev {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return err
	}
	if s.rev != h.Rev || s.digest != h.Digest {
		return fmt.Errorf("%w: it folds event %d with digest %s, which this record does not hold (it belongs to another record)",
			ErrSnapshotInvalid, h.Rev, h.Digest)
	}
	want, err := s.encodePayload()
	if err != nil {
		return err
	}
	if !bytes.Equal(want, payload) {
		return fmt.Errorf("%w: it differs from a full fold of events 1..%d", ErrSnapshotInvalid, h.Rev)
	}
	return nil
}
