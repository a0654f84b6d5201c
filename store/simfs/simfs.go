// Package simfs is an in-memory file system for testing what the file
// store (store.FS) does under faults and power loss. It keeps, for every
// file, the bytes a reader sees (volatile) apart from the bytes that
// survive a power loss (durable), in the manner of LazyFS:
//
//   - a write, truncate or create is volatile until the file is
//     fsync'd or fdatasync'd (both make its data and size durable);
//   - a directory entry (created, linked, renamed, removed) is volatile
//     until the directory is fsync'd (SyncDir); a file whose entry was
//     never made durable is lost with it;
//   - Crash drops everything volatile, makes every open handle fail with
//     ErrCrashed and releases every lock; CrashTorn keeps, per file, a
//     seeded random prefix of the writes since its last sync, the last of
//     them possibly cut short or with only some of its 512-byte sectors
//     written (a torn write: old bytes can stay between new ones, and
//     past the file's old end, where a write grew it, NULs), and per
//     directory either all or none of its volatile entries;
//   - Inject fails the N-th matching operation with an error (ENOSPC,
//     EIO, …), optionally after writing part of the bytes (a short write);
//   - SetHook sees every operation before it runs and may fail it (after
//     calling Crash, to lose power at that point);
//   - flock is kept in memory per open file, with the kernel's semantics:
//     shared or exclusive, belonging to the open file, converted when asked
//     again, released on Close; so are the writer marks
//     (store.File.WriterLock), a second lock of the same kind.
//
// Paths are absolute; "/" always exists (dir.go holds the namespace
// operations, file.go the open files). There are no symbolic links,
// permissions or timestamps. An FS is safe for concurrent use.
package simfs

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"github.com/obversa/obversa/store"
)

// ErrCrashed is returned by every operation on a handle opened before a
// Crash, and by an operation a hook failed to simulate power loss.
var ErrCrashed = errors.New("simfs: power lost")

// Op names an operation, for faults and hooks.
type Op string

// The operations an FS counts, in the order of the file interface.
const (
	OpOpen     Op = "open" // OpenFile; Path is the file's
	OpRead     Op = "read"
	OpWrite    Op = "write"
	OpTruncate Op = "truncate"
	OpSync     Op = "sync"     // fsync of a file
	OpDatasync Op = "datasync" // fdatasync
	OpLock     Op = "lock"
	OpMkdir    Op = "mkdir"
	OpRemove   Op = "remove"
	OpRename   Op = "rename" // Path is the new path
	OpLink     Op = "link"   // Path is the new name
	OpStat     Op = "stat"
	OpReadDir  Op = "readdir"
	OpSyncDir  Op = "syncdir"
)

// Fault fails matching operations with Err.
type Fault struct {
	// Op is the operation to fail.
	Op Op
	// Path, when set, must be the operation's path or a suffix of it
	// starting at a path element ("events.jsonl" matches
	// "/s/runs/r/events.jsonl").
	Path string
	// After lets this many matching operations succeed first (0: the
	// first one fails).
	After int
	// Times is how many operations fail: 0 means 1; negative means every
	// later matching operation, until removed.
	Times int
	// Err is the error, e.g. syscall.ENOSPC or syscall.EIO; it is returned
	// wrapped in an *fs.PathError.
	Err error
	// Short makes a failing write write half its bytes first (a short
	// write that then fails).
	Short bool
}

// FS is the simulated file system. Create it with New.
type FS struct {
	mu     sync.Mutex
	cond   *sync.Cond // lock waiters
	root   *inode
	epoch  int // bumped by Crash: handles of older epochs fail
	faults []*fault
	hook   func(op Op, path string) error
	counts map[Op]int
}

type fault struct {
	Fault
	seen, fired int
}

// inode is a file or a directory.
type inode struct {
	dir bool
	// A file's bytes as readers see them, the bytes that survive a crash,
	// and the changes since its last sync, in order.
	data, durable []byte
	pending       []change
	// A directory's entries as they are and as they survive a crash.
	entries, durableEntries map[string]*inode
	// flock state, and the writer marks (store.File.WriterLock).
	flock, writers lockState
}

// lockState is a lock of an inode: the open file holding it exclusively,
// or those holding it shared.
type lockState struct {
	exclusive *file
	shared    map[*file]bool
}

// change is a write (data at off) or a truncation (to size).
type change struct {
	off   int64
	data  []byte
	size  int64
	trunc bool
}

func newDir() *inode {
	return &inode{dir: true, entries: map[string]*inode{}, durableEntries: map[string]*inode{}}
}

// New returns an empty FS holding only "/".
func New() *FS {
	f := &FS{root: newDir(), counts: map[Op]int{}}
	f.cond = sync.NewCond(&f.mu)
	return f
}

var _ store.FS = (*FS)(nil)

// Inject adds a fault and returns a function that removes it.
func (f *FS) Inject(ft Fault) (remove func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := &fault{Fault: ft}
	f.faults = append(f.faults, p)
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.faults = slices.DeleteFunc(f.faults, func(q *fault) bool { return q == p })
	}
}

// SetHook makes h see every operation before it runs (nil removes it). An
// error from h fails the operation with it; h may call Crash first. h runs
// without the FS's lock held.
func (f *FS) SetHook(h func(op Op, path string) error) {
	f.mu.Lock()
	f.hook = h
	f.mu.Unlock()
}

// Count returns how many operations op have been attempted.
func (f *FS) Count(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[op]
}

// Crash simulates a power loss: every file goes back to its durable bytes,
// every directory to its durable entries, every open handle fails from now
// on and every lock is released. The FS stays usable (a reboot).
func (f *FS) Crash() { f.crash(nil) }

// CrashTorn is Crash that keeps some volatile state, as a disk that wrote
// part of its queue before losing power: for each file a random prefix
// (seeded) of its changes since its last sync, the last of which may be
// cut short or keep only some of its sectors (NULs past the old end of a
// write that grew the file); for each directory, at random, either all
// of its volatile entries or none.
func (f *FS) CrashTorn(seed uint64) { f.crash(rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))) }

func (f *FS) crash(rng *rand.Rand) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.epoch++
	seen := map[*inode]bool{}
	var walk func(d *inode)
	walk = func(d *inode) {
		if seen[d] {
			return
		}
		seen[d] = true
		d.flock, d.writers = lockState{}, lockState{}
		if d.dir {
			if rng == nil || rng.IntN(2) == 0 {
				d.entries = maps(d.durableEntries)
			} else {
				d.durableEntries = maps(d.entries)
			}
			for _, name := range sortedNames(d.entries) {
				walk(d.entries[name])
			}
			return
		}
		d.data = slices.Clone(d.durable)
		if rng != nil && len(d.pending) > 0 {
			keep := rng.IntN(len(d.pending) + 1)
			for i, c := range d.pending[:keep] {
				switch {
				case i != keep-1 || c.trunc:
					d.data = c.apply(d.data)
				case c.off+int64(len(c.data)) <= int64(len(d.data)) && rng.IntN(2) == 0:
					// An overwrite: the file's size does not change, so
					// the disk may write its sectors in any order.
					d.data = c.applySectors(d.data, rng)
				case rng.IntN(3) == 0:
					// A write that grows the file: the new size may reach
					// the disk with only some of its sectors; the others
					// read as NULs past the old end (unwritten extents)
					// and keep their old bytes before it.
					d.data = resize(d.data, max(int64(len(d.data)), c.off+int64(len(c.data))))
					d.data = c.applySectors(d.data, rng)
				case rng.IntN(2) == 0:
					c.data = c.data[:rng.IntN(len(c.data)+1)]
					d.data = c.apply(d.data)
				default:
					d.data = c.apply(d.data)
				}
			}
			d.durable = slices.Clone(d.data)
		}
		d.pending = nil
	}
	walk(f.root)
	f.cond.Broadcast()
}

func (c change) apply(b []byte) []byte {
	if c.trunc {
		return resize(b, c.size)
	}
	end := c.off + int64(len(c.data))
	if int64(len(b)) < end {
		b = resize(b, end)
	}
	copy(b[c.off:], c.data)
	return b
}

// SectorSize is the unit CrashTorn tears a write into when it keeps some
// of its sectors and not others: a disk writes a 512-byte sector whole or
// not at all, but the sectors of one write in any order.
const SectorSize = 512

// applySectors applies an overwrite (a write inside b) of which only a
// random subset of the SectorSize-aligned sectors reached the disk: the
// others keep the bytes they held before.
func (c change) applySectors(b []byte, rng *rand.Rand) []byte {
	end := c.off + int64(len(c.data))
	for s := c.off / SectorSize * SectorSize; s < end; s += SectorSize {
		if rng.IntN(2) == 0 {
			lo, hi := max(s, c.off), min(s+SectorSize, end)
			copy(b[lo:hi], c.data[lo-c.off:hi-c.off])
		}
	}
	return b
}

func resize(b []byte, n int64) []byte {
	if int64(len(b)) >= n {
		return b[:n]
	}
	return append(b, make([]byte, n-int64(len(b)))...)
}

func maps(m map[string]*inode) map[string]*inode {
	out := make(map[string]*inode, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sortedNames(m map[string]*inode) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// begin runs the hook and the faults for op on p and counts it. It
// returns with f.mu held, and the fault's error (and whether a failing
// write is short) if one fires.
func (f *FS) begin(op Op, p string) (short bool, err error) {
	f.mu.Lock()
	h := f.hook
	f.mu.Unlock()
	if h != nil {
		if err := h(op, p); err != nil {
			f.mu.Lock()
			return false, pathErr(op, p, err)
		}
	}
	f.mu.Lock()
	f.counts[op]++
	for _, ft := range f.faults {
		if ft.Op != op || !matches(p, ft.Path) {
			continue
		}
		ft.seen++
		times := ft.Times
		if times == 0 {
			times = 1
		}
		if ft.seen > ft.After && (times < 0 || ft.fired < times) {
			ft.fired++
			return ft.Short, pathErr(op, p, ft.Err)
		}
	}
	return false, nil
}

func matches(p, suffix string) bool {
	return suffix == "" || p == suffix || strings.HasSuffix(p, "/"+strings.TrimPrefix(suffix, "/"))
}

func pathErr(op Op, p string, err error) error {
	return &fs.PathError{Op: string(op), Path: p, Err: err}
}
