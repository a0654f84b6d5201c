package store

import (
	"fmt"
	"path/filepath"
)

// The errors of a record that cannot be trusted as it is: a damaged
// event line, an index that disagrees with its events, an unreadable
// holder record.

// CorruptError names the first damaged line of an event stream. It matches
// ErrCorruptEventStream. Line is 1-based; because the stream holds exactly
// one event per line and rev is contiguous from 1, Rev is the revision that
// line holds (or should hold).
type CorruptError struct {
	Path    string // events.jsonl path, or the label of a database run (pgstore)
	Line    int    // 1-based line number
	Rev     int64  // revision at that line
	Offset  int64  // byte offset of the start of the line
	Problem string // what is wrong, without quoting event content
}

// Error names the file, line, revision and problem, and what a person can
// do: the stream's committed events changed after they were written, which
// no command mends. The backup it names is the run's events.jsonl for a
// file, the database's for a database run.
func (e *CorruptError) Error() string {
	backup := "events.jsonl restored from a backup"
	if filepath.Base(e.Path) != eventsFile {
		backup = "the run's events restored from a backup of the database"
	}
	return "CORRUPT_EVENT_STREAM: " + e.problem() + "; events already written were changed since, and nothing was cut or changed now: " +
		"`obversa verify` lists every fault, and " + backup + " lets the run be read and carried on again"
}

func (e *CorruptError) problem() string {
	return fmt.Sprintf("%s line %d (rev %d, byte %d): %s", e.Path, e.Line, e.Rev, e.Offset, e.Problem)
}

// Is reports whether target is ErrCorruptEventStream.
func (e *CorruptError) Is(target error) bool { return target == ErrCorruptEventStream }

// IndexError is returned when events.jsonl.idx, the validated-prefix
// cache, exists but cannot be read as one (empty, another format or
// version, a failed checksum, offsets out of order or past its end), or
// disagrees with an events.jsonl every line of which validates. It matches
// ErrCorruptEventStream. The cache records which bytes were committed, so
// without a trustworthy one a torn write cannot be told from a committed
// event that was cut short: the open is refused and nothing on disk is
// cut, rewritten or removed (docs/decisions.md).
type IndexError struct {
	Path    string // the events.jsonl.idx path
	Problem string // what is wrong with it
}

// Error names the file and the problem and says how to recover.
func (e *IndexError) Error() string {
	return fmt.Sprintf("CORRUPT_EVENT_STREAM: %s is damaged: %s. It records which events were committed, so the run cannot tell "+
		"a torn write from a lost event without it; nothing was cut or changed. Check the run with `obversa verify` (and compare "+
		"events.jsonl with a backup, if there is one); to carry on from events.jsonl as it stands, move the index aside "+
		"(mv %s %s.bad): the next open rebuilds it and moves any torn tail to events.jsonl.torn-<time>",
		e.Path, e.Problem, e.Path, e.Path)
}

// Is reports whether target is ErrCorruptEventStream.
func (e *IndexError) Is(target error) bool { return target == ErrCorruptEventStream }

// HolderRecordError is returned by Run.Holder when the run lock file
// (<rundir>/lock) holds a holder record that cannot be parsed. Held says
// whether a process holds the run lock (the flock, which is authoritative;
// the record only names the holder). When none does, the record is stale:
// the run has no owner, and the next process to take the lock rewrites it
// (docs/decisions.md) — a caller may go on as for a run never locked.
type HolderRecordError struct {
	Path    string // the lock file
	Problem string // why the record cannot be parsed
	Held    bool   // a process holds the run lock now
}

// Error names the file and the problem and says what to do.
func (e *HolderRecordError) Error() string {
	if e.Held {
		return fmt.Sprintf("store: the holder record in %s cannot be read (%s), and a process holds the run lock, so the run is owned "+
			"by a process that cannot be named: find it with `fuser -v %s` (or `lsof %s`) and end it (SIGTERM lets a watchdog record "+
			"STOPPED); once the lock is free, `obversa resume` rewrites the record", e.Path, e.Problem, e.Path, e.Path)
	}
	return fmt.Sprintf("store: the holder record in %s cannot be read (%s); no process holds the run lock, so the record is stale "+
		"and the run has no owner: `obversa resume` rewrites it when it takes the lock", e.Path, e.Problem)
}
