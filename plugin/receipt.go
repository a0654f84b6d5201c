package plugin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
)

// A hash receipt says that a plugin's source and its cache entry were
// read in full, found to hold the same bytes with the pinned digest, and
// showed the given stamps all along, each settled (StampSettle). It is an
// empty file in CopyOptions.Receipts named by the SHA-256 of what it
// vouches for (receiptName), so there is nothing in it to parse: a
// receipt either exists under the one name these stamps give, or the
// bytes are read again (docs/decisions.md, "An unchanged plugin source is
// not hashed again").

// receiptVersion is part of every receipt's name: a change of what a
// receipt vouches for changes it, and older receipts are ignored.
const receiptVersion = 1

// receiptInput is what a receipt's name is the digest of.
type receiptInput struct {
	Version int       `json:"v"`
	SHA256  string    `json:"sha256"`
	Source  FileStamp `json:"source"`
	Entry   FileStamp `json:"entry"`
}

// receiptName is the file name (64 hex digits) of the receipt for a
// source that showed src and a cache entry that showed entry while both
// were read in full and found to hold the bytes of sum.
func receiptName(sum string, src, entry FileStamp) string {
	b, err := json.Marshal(receiptInput{Version: receiptVersion, SHA256: sum, Source: src, Entry: entry})
	if err != nil {
		// Every field is a string or a number.
		panic(err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// receipted returns the stamp of dir's entry for o.Expected when the
// source at src and that entry both show, now, the stamps of a receipt in
// o.Receipts: neither has changed since both were read in full and found
// equal with that digest. ok is false when there is no such receipt, when
// it or o.Receipts may be another user's making (ours), or when either
// file cannot be opened or stamped (the caller reads them and reports
// why).
func receipted(src, dir string, o CopyOptions) (entry *FileStamp, ok bool) {
	s, err := stampAt(src)
	if err != nil {
		return nil, false
	}
	e, err := stampAt(filepath.Join(dir, o.Expected))
	if err != nil {
		return nil, false
	}
	if d, err := os.Lstat(o.Receipts); err != nil || !d.IsDir() || !ours(d, true) {
		return nil, false
	}
	st, err := os.Lstat(filepath.Join(o.Receipts, receiptName(o.Expected, s, e)))
	if err != nil || !st.Mode().IsRegular() || !ours(st, false) {
		return nil, false
	}
	return &e, true
}

// ours reports whether a receipt, or with dir its directory, can have
// been made only by this process's user: owned by the effective user and,
// for the directory, writable by no one else. Anyone who can create a
// file there could name a receipt after a cache entry of their own bytes
// (the name is computed from stamps anyone can read), so a directory of
// another user's, or one a group or everyone may write, is not trusted
// and every source is read in full (docs/decisions.md, "An unchanged
// plugin source is not hashed again").
func ours(fi fs.FileInfo, dir bool) bool {
	s, err := stampOf(fi)
	if err != nil || s.UID != uint32(os.Geteuid()) {
		return false
	}
	return !dir || s.Mode&0o022 == 0
}

// stampAt opens the regular file at path and returns its stamp.
func stampAt(path string) (FileStamp, error) {
	f, err := openRegular(path)
	if err != nil {
		return FileStamp{}, err
	}
	defer f.Close()
	return StampOf(f)
}

// writeReceipt records, in dir, that a source showing src and a cache
// entry showing entry hold the bytes of sum. It is not synced: a receipt
// lost to a crash costs the next run one read of both files. Errors are
// those of creating the directory (0700: only this user writes
// receipts; see ours) or the file.
func writeReceipt(dir, sum string, src, entry FileStamp) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, receiptName(sum, src, entry)), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}
