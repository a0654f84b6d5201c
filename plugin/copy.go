package plugin

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/obversa/obversa/internal/durable"
	"github.com/obversa/obversa/internal/shellquote"
)

// CopyOptions configures CopyBinary.
type CopyOptions struct {
	// Expected is the pinned SHA-256 (64 lower-case hex digits); empty
	// accepts whatever digest the bytes have (trust on first use).
	Expected string
	// Keys, when not empty, make a valid minisign signature mandatory: the
	// file SignaturePath must be signed by one of them, and its statement
	// must name the bytes' SHA-256 and this machine's platform.
	Keys []PublicKey
	// SignaturePath is the signature file; empty = source + SignatureSuffix.
	SignaturePath string
	// GOOS and GOARCH are the platform a signed statement must name; empty
	// = this machine's (runtime.GOOS, runtime.GOARCH).
	GOOS, GOARCH string
	// Receipts, when not empty, is a directory of hash receipts: a source
	// pinned to Expected (no Keys) whose file and cache entry both still
	// show the stamps they showed when an earlier CopyBinary read them in
	// full is not read again, and a full read of two settled files
	// (StampSettle) that finds them equal leaves a receipt
	// (docs/decisions.md, "An unchanged plugin source is not hashed
	// again"). Empty reads every time.
	Receipts string
	// Now is the clock a stamp's settle margin is measured against
	// (StampSettle): a file whose change time is within the margin of
	// Now() when its read begins is too young to vouch for its bytes.
	// nil = time.Now.
	Now func() time.Time
}

// Copied is a binary CopyBinary read, hashed and, when a directory was
// given, placed in a content-addressed directory.
type Copied struct {
	// Path is dir/<SHA256>, the only file that may be executed for these
	// bytes; empty when CopyBinary was given no directory.
	Path string
	// SHA256 is the digest of the bytes read (lower-case hex).
	SHA256 string
	// Verified is what the signature proved; nil when no key was given.
	Verified *Verified
	// Reused is true when dir already held these bytes under that name.
	Reused bool
	// Stamp is the stamp the reused entry showed while all its bytes were
	// compared with the source's, in this call or, for a Receipted one, an
	// earlier one (OpenCached takes it instead of hashing the entry again);
	// nil for a new copy and when the entry was too young or changed while
	// it was read (StampSettle).
	Stamp *FileStamp
	// Receipted is true when neither the source nor the entry was read:
	// both showed the stamps of a hash receipt (CopyOptions.Receipts).
	Receipted bool
}

// CopyBinary reads the plugin binary at src exactly once and, while
// reading, hashes it, verifies its signature (when o.Keys is set) and
// copies it into dir, so that the bytes checked and the bytes that will run
// are one and the same (docs/plugins.md): the source path is never executed, and
// swapping the source during or after the check changes nothing. The copy
// is written to a temporary file, synced, made read-only (0555) and renamed
// to dir/<sha256> only when its digest equals o.Expected (when given) and
// its signature verified. When dir already holds an entry named
// o.Expected (a repeated run), nothing is written: the source is compared
// with the entry byte for byte while it is hashed, and equal bytes reuse
// the entry; an entry with other bytes (tampered) is refused with an error
// wrapping ErrCacheChanged. An empty dir hashes and verifies without
// copying. With o.Receipts, an unsigned pinned source and its entry that
// have not changed since an earlier call read them in full are not read
// at all (CopyOptions.Receipts).
//
// Errors, each naming the plugin (name) and the path: a *NotRegularError
// for a device, named pipe, socket or directory (never read); fs errors
// (fs.ErrNotExist for a missing file); *DigestMismatchError when the bytes
// are not the pinned ones (checked before the signature, so a swapped
// binary is reported by both digests); *UntrustedError for a signature that
// is missing or invalid, or whose statement names another platform
// (ReasonPlatform); ErrCacheChanged; I/O errors writing dir.
func CopyBinary(name, src, dir string, o CopyOptions) (*Copied, error) {
	receipts := o.Receipts != "" && dir != "" && o.Expected != "" && len(o.Keys) == 0
	if receipts {
		if stamp, ok := receipted(src, dir, o); ok {
			return &Copied{Path: filepath.Join(dir, o.Expected), SHA256: o.Expected, Reused: true, Stamp: stamp, Receipted: true}, nil
		}
	}
	// A signature that cannot be used is reported after the digest, so
	// that a swapped binary reads as a digest mismatch.
	ts, sigErr := o.signature(src)
	in, err := openRegular(src)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: %w", name, err)
	}
	defer in.Close()
	target, err := openCopyTarget(dir, o.Expected)
	if err != nil {
		return nil, err
	}
	defer target.close()
	c := &Copied{}
	var verified bool
	read := func() (err error) {
		c.SHA256, verified, err = hashVerify(io.TeeReader(in, target.out), ts)
		return err
	}
	// srcStamp vouches for the source's bytes, when settled and asked for.
	var srcStamp *FileStamp
	if target.entry != nil {
		readAll := read
		if receipts {
			readAll = func() (err error) {
				srcStamp, err = stampedRead(in, read, o.Now)
				return err
			}
		}
		// The entry is read in full: its stamp, if settled, vouches for it.
		target.stamp, err = stampedRead(target.entry, readAll, o.Now)
	} else {
		err = read()
	}
	if err != nil {
		return nil, fmt.Errorf("plugin %q: reading %s: %w", name, src, err)
	}
	if o.Expected != "" && c.SHA256 != o.Expected {
		return nil, &DigestMismatchError{Name: name, Path: src, Expected: o.Expected, Actual: c.SHA256}
	}
	if sigErr != nil {
		return nil, fmt.Errorf("plugin %q: %w", name, sigErr)
	}
	if ts != nil {
		if c.Verified, err = ts.result(c.SHA256, verified); err != nil {
			return nil, fmt.Errorf("plugin %q: %w", name, err)
		}
		if err := checkPlatform(ts, c.Verified.Statement, o); err != nil {
			return nil, fmt.Errorf("plugin %q: %w", name, err)
		}
	}
	if err := target.keep(dir, c); err != nil {
		return nil, fmt.Errorf("plugin %q: %w", name, err)
	}
	if srcStamp != nil && c.Stamp != nil {
		// A receipt that cannot be written costs the next call a read.
		_ = writeReceipt(o.Receipts, c.SHA256, *srcStamp, *c.Stamp)
	}
	return c, nil
}

// signature loads the signature of the binary at src when o names keys;
// nil and no error otherwise.
func (o CopyOptions) signature(src string) (*trustedSignature, error) {
	if len(o.Keys) == 0 {
		return nil, nil
	}
	sigPath := o.SignaturePath
	if sigPath == "" {
		sigPath = src + SignatureSuffix
	}
	return loadSignature(src, sigPath, o.Keys)
}

// copyTarget is where CopyBinary's read goes: nowhere (no directory), a
// byte comparison with dir's entry for the pinned digest (a repeated
// run), or a new temporary file in dir.
type copyTarget struct {
	out io.Writer
	tmp *os.File
	// buf gathers the writes to tmp into chunks of entryChunk bytes.
	buf   *bufio.Writer
	same  *sameWriter
	entry *os.File
	// stamp is the entry's stamp while it was read, when settled.
	stamp *FileStamp
}

// openCopyTarget opens the target of a copy into dir of bytes pinned to
// expected (empty: not pinned).
func openCopyTarget(dir, expected string) (*copyTarget, error) {
	t := &copyTarget{out: io.Discard}
	if dir == "" {
		return t, nil
	}
	if expected != "" {
		// An entry for the pinned digest exists (a repeated run): compare
		// with it while hashing instead of writing a copy.
		if entry, err := openRegular(filepath.Join(dir, expected)); err == nil {
			t.entry, t.same = entry, &sameWriter{r: entry}
			t.out = t.same
			return t, nil
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return nil, err
	}
	t.tmp, t.buf = tmp, bufio.NewWriterSize(tmp, entryChunk)
	t.out = t.buf
	return t, nil
}

// entryChunk is the size of the writes that fill a new cache entry: 2 MiB,
// a huge page on amd64 and arm64. A file system that caches a file in
// large folios (ext4 and XFS on Linux 6.x) keeps each aligned 2 MiB write
// as one folio, which the kernel maps with a single page-table entry when
// the plugin executes the entry: fewer page faults and TLB misses at every
// start (docs/decisions.md, "A cache entry is written in 2 MiB chunks").
// Elsewhere it is only a larger buffer.
const entryChunk = 2 << 20

// keep finishes the copy of the bytes c describes: a compared entry must
// have been equal (ErrCacheChanged otherwise), a temporary file is placed
// as dir/<sha256>.
func (t *copyTarget) keep(dir string, c *Copied) error {
	switch {
	case t.same != nil:
		c.Path, c.Reused = filepath.Join(dir, c.SHA256), true
		if !t.same.equal() {
			return cacheChanged(c)
		}
		c.Stamp = t.stamp
	case t.tmp != nil:
		c.Path = filepath.Join(dir, c.SHA256)
		if err := t.buf.Flush(); err != nil {
			return err
		}
		return place(t.tmp, c)
	}
	return nil
}

// close closes the compared entry or closes and removes the temporary
// file (gone already once placed).
func (t *copyTarget) close() {
	if t.entry != nil {
		t.entry.Close()
	}
	if t.tmp != nil {
		t.tmp.Close()
		os.Remove(t.tmp.Name())
	}
}

// hashVerify reads r to its end and returns the SHA-256 of its bytes in
// lower-case hex and, with ts, whether they verify against its signature.
// Without ts, verified is true.
func hashVerify(r io.Reader, ts *trustedSignature) (sum string, verified bool, err error) {
	if ts != nil {
		return ts.sig.Verify(r, ts.key)
	}
	h := sha256.New()
	_, err = io.Copy(h, r)
	return hex.EncodeToString(h.Sum(nil)), true, err
}

// sameWriter compares what is written to it with the bytes of r.
type sameWriter struct {
	r    io.Reader
	buf  []byte
	diff bool
}

// Write implements io.Writer.
func (w *sameWriter) Write(p []byte) (int, error) {
	if !w.diff {
		if cap(w.buf) < len(p) {
			w.buf = make([]byte, len(p))
		}
		b := w.buf[:len(p)]
		if _, err := io.ReadFull(w.r, b); err != nil || !bytes.Equal(b, p) {
			w.diff = true
		}
	}
	return len(p), nil
}

// equal reports whether everything written equals all of r.
func (w *sameWriter) equal() bool {
	if w.diff {
		return false
	}
	var one [1]byte
	n, _ := w.r.Read(one[:])
	return n == 0
}

// checkPlatform refuses a signed statement for another machine than the
// one that will run the binary.
func checkPlatform(ts *trustedSignature, st Statement, o CopyOptions) error {
	goos, goarch := o.GOOS, o.GOARCH
	if goos == "" {
		goos = runtime.GOOS
	}
	if goarch == "" {
		goarch = runtime.GOARCH
	}
	if st.OS != goos || st.Arch != goarch {
		return ts.untrusted(ReasonPlatform, nil, "signature %s is for %s %s on %s, but this machine is %s/%s; use the build signed for this platform",
			ts.sigPath, st.Name, st.Version, st.Platform(), goos, goarch)
	}
	return nil
}

// ErrCacheChanged is returned by CopyBinary when the content-addressed
// entry of the right name already exists with other bytes: someone changed
// a cached binary (code PLUGIN_CHANGED where the host reports it).
var ErrCacheChanged = errors.New("PLUGIN_CHANGED")

// place moves the verified temporary copy to c.Path, synced, or reuses an
// identical existing entry.
func place(tmp *os.File, c *Copied) error {
	if _, err := os.Lstat(c.Path); err == nil {
		same, err := sameBytes(tmp, c.Path)
		if err != nil {
			return err
		}
		if !same {
			return cacheChanged(c)
		}
		c.Reused = true
		return nil
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Chmod(0o555); err != nil {
		return err
	}
	// Closed before it is renamed into place and executed.
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), c.Path); err != nil {
		return err
	}
	return durable.SyncDir(filepath.Dir(c.Path))
}

// cacheChanged is the ErrCacheChanged refusal of c.Path, an entry whose
// bytes are not the c.SHA256 its name pins; it names the digest they have
// and how to let the next run copy the pinned bytes again.
func cacheChanged(c *Copied) error {
	got, err := FileSHA256(c.Path)
	if err != nil {
		got = "unreadable"
	}
	return fmt.Errorf("%w: cached binary %s has sha256 %s, not the %s its name pins; remove it (rm %s) and the next run copies the pinned binary there again",
		ErrCacheChanged, c.Path, got, c.SHA256, shellquote.Quote(c.Path))
}

// sameBytes compares the whole of f (from its start) with the file at
// path.
func sameBytes(f *os.File, path string) (bool, error) {
	g, err := openRegular(path)
	if err != nil {
		return false, nil
	}
	defer g.Close()
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return false, err
	}
	w := &sameWriter{r: g}
	if _, err := io.Copy(w, f); err != nil {
		return false, err
	}
	return w.equal(), nil
}
