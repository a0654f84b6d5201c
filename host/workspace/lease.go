package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/obversa/obversa/internal/regfile"
)

// Where the lease lives, relative to the workspace root.
const leaseFileName = "workspace.lease"

// maxLeaseRecord bounds how much of a lease file is read, bytes.
const maxLeaseRecord = 64 << 10

// LeasePath returns the lease file of the workspace at root:
// <root>/.obversa/workspace.lease.
func LeasePath(root string) string {
	return filepath.Join(root, stateDirName, leaseFileName)
}

// LeaseRecord is what a holder writes into the lease file after taking
// it, one JSON object. It describes the last holder: the file is not
// cleared on Release.
type LeaseRecord struct {
	Holder     string    `json:"holder"`      // chosen by the caller, e.g. a run id
	PID        int       `json:"pid"`         // process that took the lease
	Host       string    `json:"host"`        // os.Hostname of that process
	AcquiredAt time.Time `json:"acquired_at"` // UTC
}

// Lease is a held workspace lease: flock(2) on LeasePath(root). The lock
// belongs to this Lease's open file description, so a second AcquireLease
// is refused even within the same process. Close-on-exec keeps it out of
// child processes.
type Lease struct {
	mu   sync.Mutex
	f    *os.File
	path string
}

// AcquireLease takes the workspace lease of root without waiting, creating
// <root>/.obversa if needed, and records holder (with this process's pid
// and host) in the lease file. root must be an existing directory and
// holder non-empty.
//
// When another open file description holds the lease it returns a
// *LeaseError (ErrLeaseHeld, WORKSPACE_LEASE) naming the recorded holder;
// other failures are I/O errors naming the path.
func AcquireLease(root, holder string) (*Lease, error) {
	if holder == "" {
		return nil, errors.New("workspace: lease holder is empty")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("workspace: lease root %s: %w", root, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace: lease root: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("workspace: lease root %s is not a directory", abs)
	}
	if err := os.Mkdir(filepath.Join(abs, stateDirName), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("workspace: create lease directory: %w", err)
	}
	path := LeasePath(abs)
	f, err := openLeaseFile(path)
	if err != nil {
		return nil, fmt.Errorf("workspace: open lease %s: %w", path, err)
	}
	if err := lockExclusiveNB(f); err != nil {
		defer f.Close()
		if isHeld(err) {
			le := &LeaseError{Path: path}
			if rec, ok := readLeaseRecord(f); ok {
				le.Holder, le.PID, le.Host, le.Since = rec.Holder, rec.PID, rec.Host, rec.AcquiredAt
			}
			return nil, le
		}
		return nil, fmt.Errorf("workspace: lock lease %s: %w", path, err)
	}
	host, _ := os.Hostname()
	rec, err := json.Marshal(LeaseRecord{Holder: holder, PID: os.Getpid(), Host: host, AcquiredAt: time.Now().UTC()})
	if err == nil {
		if err = f.Truncate(0); err == nil {
			_, err = f.WriteAt(append(rec, '\n'), 0)
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("workspace: write lease holder %s: %w", path, err)
	}
	return &Lease{f: f, path: path}, nil
}

// Path returns the lease file.
func (l *Lease) Path() string { return l.path }

// Release unlocks and closes the lease. It is safe to call more than once
// and on a nil Lease; later calls return nil. The holder record stays in
// the file.
func (l *Lease) Release() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	// Unlock explicitly: a child forked by another goroutine shares the
	// descriptor until it execs, and closing alone would keep the lock that
	// long.
	err := unlock(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	if err != nil {
		return fmt.Errorf("workspace: release lease %s: %w", l.path, err)
	}
	return nil
}

// ReadLease returns the holder record of root's lease file. found is false
// when there is no lease file or no readable record in it. The record names
// the last holder; whether it still holds the lease only AcquireLease can
// tell.
func ReadLease(root string) (rec LeaseRecord, found bool, err error) {
	f, err := regfile.OpenFile(LeasePath(root), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return LeaseRecord{}, false, nil
	}
	if err != nil {
		return LeaseRecord{}, false, fmt.Errorf("workspace: read lease: %w", err)
	}
	defer f.Close()
	rec, found = readLeaseRecord(f)
	return rec, found, nil
}

// readLeaseRecord reads the record from the start of f.
func readLeaseRecord(f *os.File) (LeaseRecord, bool) {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, maxLeaseRecord))
	if err != nil || len(b) == 0 {
		return LeaseRecord{}, false
	}
	var rec LeaseRecord
	if err := json.Unmarshal(b, &rec); err != nil || rec.Holder == "" {
		return LeaseRecord{}, false
	}
	return rec, true
}
