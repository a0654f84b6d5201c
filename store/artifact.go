package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

const (
	artifactsDir  = "artifacts"
	blobsDir      = "sha256" // under artifactsDir
	tmpDir        = "tmp"    // under artifactsDir; temp files live only while their writer holds the flock
	maxPurposeLen = 256
)

// ArtifactRef references a stored artifact from event data. Verify treats
// any JSON object in event data with "digest": "sha256:…" and "size" members
// as a reference.
type ArtifactRef struct {
	Digest    string `json:"digest"`     // "sha256:<64 lower-case hex>" of the stored bytes
	Size      int64  `json:"size"`       // stored bytes
	MediaType string `json:"media_type"` // RFC 6838 media type, e.g. "text/plain; charset=utf-8"
	Purpose   string `json:"purpose"`    // free text, e.g. "engine-result"
}

// artifactStore writes and reads <run>/artifacts/sha256/<hex>.
type artifactStore struct {
	fsys  FS
	dir   string // <run>/artifacts
	blobs string // <run>/artifacts/sha256
	pol   *policy

	mu    sync.Mutex       // serialises writers in this process
	sizes map[string]int64 // hex → size of blobs seen on disk
	total int64            // sum of sizes
}

func newArtifactStore(fsys FS, runDir string, pol *policy) *artifactStore {
	dir := filepath.Join(runDir, artifactsDir)
	return &artifactStore{fsys: fsys, dir: dir, blobs: filepath.Join(dir, blobsDir), pol: pol, sizes: map[string]int64{}}
}

// mediaKind classifies a media type for the secret rules.
type mediaKind int

const (
	mediaBinary mediaKind = iota // refused when it holds a secret's bytes
	mediaText                    // text/*: secrets are redacted
	mediaJSON                    // JSON: refused, also when escaped
)

func classifyMedia(mediaType string) (mediaKind, error) {
	mt, _, err := mime.ParseMediaType(mediaType)
	if err != nil {
		return 0, fmt.Errorf("%w: media type is not valid (RFC 6838): %v", ErrInvalidArtifact, err)
	}
	typ, sub, _ := strings.Cut(mt, "/")
	switch {
	case sub == "json" || strings.HasSuffix(sub, "+json") || sub == "x-ndjson" || sub == "jsonl" || sub == "x-jsonlines":
		return mediaJSON, nil
	case typ == "text":
		return mediaText, nil
	}
	return mediaBinary, nil
}

// PutArtifact stores data as a content-addressed artifact and returns its
// reference. Known secrets: in a text/* artifact they are replaced by
// "[REDACTED]" before hashing (the reference describes the redacted bytes);
// a JSON artifact (application/json, */*+json, JSON Lines) holding one —
// raw, escaped, or split by an escape — is refused with ErrKnownSecret; any
// other media type is refused when its bytes hold one. The blob is written
// to a temporary file, fsynced, linked to artifacts/sha256/<hex> and the
// directory fsynced. Storing bytes already stored writes nothing.
//
// Errors: ErrNotOwner (the handle holds no ownership), ErrReadOnly,
// ErrInvalidArtifact, ErrKnownSecret, ErrStorageLimitExceeded
// (max_artifact_bytes, or max_total_artifact_bytes_per_run counting
// distinct blobs), ErrClosed, I/O errors.
func (r *Run) PutArtifact(ctx context.Context, data []byte, mediaType, purpose string) (ArtifactRef, error) {
	if err := r.owned(); err != nil {
		return ArtifactRef{}, err
	}
	if err := ctx.Err(); err != nil {
		return ArtifactRef{}, err
	}
	return r.arts.put(data, mediaType, purpose)
}

// prepareArtifact applies the artifact rules that do not depend on where
// the blob is kept: the media type and purpose are checked, known secrets
// redacted (text) or refused, max_artifact_bytes checked, and the bytes to
// store (data, or its redacted copy) hashed into their reference.
func (p *policy) prepareArtifact(data []byte, mediaType, purpose string) (ArtifactRef, []byte, error) {
	kind, err := classifyMedia(mediaType)
	if err != nil {
		return ArtifactRef{}, nil, err
	}
	if len(purpose) > maxPurposeLen || strings.ContainsFunc(purpose, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return ArtifactRef{}, nil, fmt.Errorf("%w: purpose must be at most %d bytes without control characters", ErrInvalidArtifact, maxPurposeLen)
	}
	for _, field := range []string{mediaType, purpose} {
		if name, ok := p.secretIn([]byte(field)); ok {
			return ArtifactRef{}, nil, secretErrorf("the artifact's media type or purpose contains %s (value withheld)", name)
		}
	}
	switch kind {
	case mediaText:
		data, _ = p.redact(data)
		if name, ok := p.secretIn(data); ok { // only if a secret contains the marker
			return ArtifactRef{}, nil, secretErrorf("%s %s artifact (purpose %q) still contains %s after redaction", article(mediaType), mediaType, purpose, name)
		}
	case mediaJSON:
		if found, path, name := p.secretInJSON(data, "$"); found {
			where := "its content"
			if path != "" {
				where = "field " + path
			}
			return ArtifactRef{}, nil, secretErrorf("%s artifact (purpose %q): %s contains %s (value withheld)", mediaType, purpose, where, name)
		}
	default:
		if name, ok := p.secretIn(data); ok {
			return ArtifactRef{}, nil, secretErrorf("%s artifact (purpose %q) contains %s (value withheld)", mediaType, purpose, name)
		}
	}
	size := int64(len(data))
	if max := p.MaxArtifactBytes; max > 0 && size > max {
		return ArtifactRef{}, nil, &LimitError{Limit: "max_artifact_bytes", Max: max, Size: size,
			What: fmt.Sprintf("%s %s artifact (purpose %q)", article(mediaType), mediaType, purpose)}
	}
	sum := sha256.Sum256(data)
	hexSum := hex.EncodeToString(sum[:])
	return ArtifactRef{Digest: digestPrefix + hexSum, Size: size, MediaType: mediaType, Purpose: purpose}, data, nil
}

// checkRunTotal refuses a new distinct artifact ref that would take the
// run's total of distinct artifact bytes from total past
// max_total_artifact_bytes_per_run.
func (p *policy) checkRunTotal(total int64, ref ArtifactRef) error {
	if max := p.MaxTotalArtifactBytesPerRun; max > 0 && total+ref.Size > max {
		return &LimitError{Limit: "max_total_artifact_bytes_per_run", Max: max, Size: total + ref.Size,
			What: fmt.Sprintf("the run's distinct artifacts with this %s artifact (purpose %q)", ref.MediaType, ref.Purpose)}
	}
	return nil
}

func (a *artifactStore) put(data []byte, mediaType, purpose string) (ArtifactRef, error) {
	ref, data, err := a.pol.prepareArtifact(data, mediaType, purpose)
	if err != nil {
		return ArtifactRef{}, err
	}
	size := ref.Size
	hexSum := ref.Digest[len(digestPrefix):]

	a.mu.Lock()
	defer a.mu.Unlock()
	if err := mkdirAllSync(a.fsys, a.blobs); err != nil {
		return ArtifactRef{}, err
	}
	// The flock on the blob directory serialises writers across processes:
	// the per-run total is checked and the blob linked under it.
	d, err := a.fsys.OpenFile(a.blobs, os.O_RDONLY, 0)
	if err != nil {
		return ArtifactRef{}, storageErr("open", a.blobs, err)
	}
	defer d.Close()
	if err := d.Lock(true, true); err != nil {
		return ArtifactRef{}, storageErr("lock", a.blobs, err)
	}
	defer d.Unlock()
	if err := a.rescan(); err != nil {
		return ArtifactRef{}, err
	}
	final := filepath.Join(a.blobs, hexSum)
	replace := false
	if have, ok := a.sizes[hexSum]; ok {
		if have == size && a.hashFile(final) == hexSum {
			return ref, nil
		}
		replace = true // a damaged copy: put the right bytes in its place
	}
	if !replace {
		if err := a.pol.checkRunTotal(a.total, ref); err != nil {
			return ArtifactRef{}, err
		}
	}
	if err := a.writeBlob(final, data, replace); err != nil {
		return ArtifactRef{}, err
	}
	if replace {
		a.total -= a.sizes[hexSum]
	}
	a.sizes[hexSum] = size
	a.total += size
	return ref, nil
}

// rescan adds blobs other processes stored to the size table, and removes
// temporary files left by writers that died (a live writer holds the flock
// while its temporary file exists, and the caller holds it now).
func (a *artifactStore) rescan() error {
	ents, err := a.fsys.ReadDir(a.blobs)
	if err != nil {
		return storageErr("read", a.blobs, err)
	}
	for _, e := range ents {
		name := e.Name()
		if _, ok := a.sizes[name]; ok || !isHex64(name) {
			continue
		}
		fi, err := a.fsys.Lstat(filepath.Join(a.blobs, name))
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		a.sizes[name] = fi.Size()
		a.total += fi.Size()
	}
	tmps, _ := a.fsys.ReadDir(filepath.Join(a.dir, tmpDir))
	for _, t := range tmps {
		a.fsys.Remove(filepath.Join(a.dir, tmpDir, t.Name()))
	}
	return nil
}

// writeBlob writes data to a temporary file, fsyncs it, links it to final
// (renames over final when replacing a damaged copy) and fsyncs the
// directory.
func (a *artifactStore) writeBlob(final string, data []byte, replace bool) error {
	td := filepath.Join(a.dir, tmpDir)
	if err := a.fsys.Mkdir(td, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return storageErr("mkdir", td, err)
	}
	name, tmp, err := a.createTemp(td)
	if err != nil {
		return storageErr("create", td, err)
	}
	defer a.fsys.Remove(name)
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Datasync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return storageErr("write", name, err)
	}
	if replace {
		err = a.fsys.Rename(name, final)
	} else {
		err = a.fsys.Link(name, final)
	}
	if err != nil {
		return storageErr("link", final, err)
	}
	return syncDir(a.fsys, a.blobs)
}

// createTemp creates a new temporary file in dir, "blob-<random>".
func (a *artifactStore) createTemp(dir string) (string, File, error) {
	for {
		var b [8]byte
		_, _ = rand.Read(b[:])
		name := filepath.Join(dir, "blob-"+hex.EncodeToString(b[:]))
		f, err := a.fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if !errors.Is(err, fs.ErrExist) {
			return name, f, err
		}
	}
}

// ReadArtifact returns the bytes ref names after re-hashing them. Errors:
// ErrArtifactIntegrity (malformed reference, size or digest mismatch),
// ErrArtifactNotFound, ErrClosed, I/O errors.
func (r *Run) ReadArtifact(ctx context.Context, ref ArtifactRef) ([]byte, error) {
	if err := r.usable(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	hexSum, err := refHex(ref)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(r.arts.blobs, hexSum)
	f, err := r.fsys.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrArtifactNotFound, ref.Digest)
	}
	if err != nil {
		return nil, storageErr("open", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, ref.Size+1))
	if err != nil {
		return nil, storageErr("read", path, err)
	}
	if int64(len(data)) != ref.Size {
		return nil, fmt.Errorf("%w: %s: stored size differs from the reference's %d bytes", ErrArtifactIntegrity, ref.Digest, ref.Size)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != hexSum {
		return nil, fmt.Errorf("%w: %s: stored bytes do not hash to the digest", ErrArtifactIntegrity, ref.Digest)
	}
	return data, nil
}

// refHex checks a reference's digest and size and returns the hex digest.
func refHex(ref ArtifactRef) (string, error) {
	if _, ok := parseDigest([]byte(ref.Digest)); !ok {
		return "", fmt.Errorf("%w: reference digest %s is not \"sha256:<64 lower-case hex>\"", ErrArtifactIntegrity, quoteShort(ref.Digest))
	}
	if ref.Size < 0 {
		return "", fmt.Errorf("%w: %s: negative size %d", ErrArtifactIntegrity, ref.Digest, ref.Size)
	}
	return ref.Digest[len(digestPrefix):], nil
}

// hashFile returns the hex SHA-256 of a file, "" if it cannot be read.
func (a *artifactStore) hashFile(path string) string {
	f, err := a.fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// article is the indefinite article before word: "an" before a vowel
// ("an application/json artifact"), else "a".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiouAEIOU", rune(word[0])) {
		return "an"
	}
	return "a"
}
