package plugin

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// FileStamp is what fstat(2) says about one open file that tells it apart
// from every other file and from every later state of itself: device and
// inode, size, mode, owner, and the modification and change times in ns
// since the Unix epoch. The kernel sets a file's change time (ctime) to the
// current time on every change of its bytes or metadata, and nothing in
// user space can set it back (utimensat changes it too), so a file that
// shows a stamp it showed before has not been written in between — when
// the stamp was settled, see StampSettle (docs/decisions.md, "A verified
// cache entry is not hashed twice").
type FileStamp struct {
	Dev     uint64 `json:"dev"`
	Ino     uint64 `json:"ino"`
	Size    int64  `json:"size"`
	Mode    uint32 `json:"mode"`
	UID     uint32 `json:"uid"`
	MtimeNS int64  `json:"mtime_ns"`
	CtimeNS int64  `json:"ctime_ns"`
}

// StampSettle is how much older than the clock a file's ctime must be when
// its bytes start to be read for its stamp to vouch for them. A change
// made while or after they are read then gets a later ctime: without the
// margin, a change within the same tick of the file system's clock
// (timestamps are coarse: one kernel tick on local file systems, up to 2 s
// on some others) could leave the ctime as it was. A cache entry is
// written once, so only its first run is too young; it is hashed instead.
const StampSettle = 2 * time.Second

// ErrNoStamp is returned by StampOf where the platform gives no inode and
// change time.
var ErrNoStamp = errors.New("no file stamp on this platform")

// StampOf returns the stamp of the open file f: the *fs.PathError of
// fstat, or ErrNoStamp where the platform has none.
func StampOf(f *os.File) (FileStamp, error) {
	st, err := f.Stat()
	if err != nil {
		return FileStamp{}, err
	}
	return stampOf(st)
}

// stampedRead calls read, which reads all of f, between two stamps of f,
// and returns the stamp that vouches for the bytes read: nil when f's
// ctime was not settled before the read (StampSettle, measured against
// now(); nil now = time.Now), when the stamps differ (f changed while it
// was read) or when there is no stamp.
func stampedRead(f *os.File, read func() error, now func() time.Time) (*FileStamp, error) {
	if now == nil {
		now = time.Now
	}
	at := now()
	before, stampErr := StampOf(f)
	if err := read(); err != nil {
		return nil, err
	}
	if stampErr != nil || before.CtimeNS >= at.Add(-StampSettle).UnixNano() {
		return nil, nil
	}
	after, err := StampOf(f)
	if err != nil || after != before {
		return nil, nil
	}
	return &before, nil
}

// OpenCached opens the content-addressed copy at path for reading and
// makes sure that its bytes are those sum pins (64 lower-case hex
// digits). When stamp is not nil and the open file shows it (StampOf),
// its bytes are not read again: they were read in full and found to be
// sum's while the file showed that stamp (Copied.Stamp, an earlier
// OpenCached). Otherwise the open file is hashed. It returns the open
// file — the one to execute, whatever is renamed over path meanwhile —
// and the stamp that vouches for its bytes now (nil when none can:
// StampSettle). The caller closes the file.
//
// Errors: fs errors of opening (fs.ErrNotExist for a missing entry); a
// *NotRegularError; a *DigestMismatchError (Name empty) for other bytes;
// read errors.
func OpenCached(path, sum string, stamp *FileStamp) (*os.File, *FileStamp, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, nil, err
	}
	if stamp != nil {
		if now, err := StampOf(f); err == nil && now == *stamp {
			return f, stamp, nil
		}
	}
	h := sha256.New()
	vouch, err := stampedRead(f, func() error {
		_, err := io.Copy(h, f)
		return err
	}, nil)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("hashing %s: %w", path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sum {
		f.Close()
		return nil, nil, &DigestMismatchError{Path: path, Expected: sum, Actual: got}
	}
	return f, vouch, nil
}
