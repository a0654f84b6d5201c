package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// maxFaults bounds the faults one Verify reports.
const maxFaults = 1000

// Fault is one problem Verify found.
type Fault struct {
	Code     string `json:"code"`               // CORRUPT_EVENT_STREAM, ARTIFACT_NOT_FOUND or ARTIFACT_INTEGRITY
	File     string `json:"file,omitempty"`     // the damaged file when it is not events.jsonl ("events.jsonl.idx")
	Rev      int64  `json:"rev,omitempty"`      // revision of the damaged event, or of the first event referencing Artifact
	Line     int    `json:"line,omitempty"`     // 1-based line of events.jsonl (== Rev for stream faults)
	Artifact string `json:"artifact,omitempty"` // the artifact digest, for artifact faults
	Problem  string `json:"problem"`            // what is wrong; never quotes event content
}

// String renders the fault on one line.
func (f Fault) String() string {
	var b strings.Builder
	b.WriteString(f.Code)
	if f.File != "" {
		fmt.Fprintf(&b, " %s", f.File)
	} else if f.Artifact != "" {
		fmt.Fprintf(&b, " artifact %s", f.Artifact)
		if f.Rev > 0 {
			fmt.Fprintf(&b, " (referenced at rev %d)", f.Rev)
		}
	} else if f.Line > 0 {
		fmt.Fprintf(&b, " line %d (rev %d)", f.Line, f.Rev)
	}
	b.WriteString(": ")
	b.WriteString(f.Problem)
	return b.String()
}

// Report is the result of Verify.
type Report struct {
	Events    int64   `json:"events"`    // events in complete batches that passed every check
	Artifacts int     `json:"artifacts"` // distinct artifacts referenced from event data and checked
	Faults    []Fault `json:"faults"`    // at most 1000; stream faults first, in file order
	// TornBytes counts the bytes after the last complete batch: a write
	// that a crash interrupted, which the next open moves aside. It is not
	// a fault.
	TornBytes int64 `json:"torn_bytes"`
	// TornReason says why the tail counts as torn ("" when TornBytes is 0).
	TornReason string `json:"torn_reason,omitempty"`
	// Truncated is set when there were more faults than Faults holds.
	Truncated bool `json:"truncated"`
}

// Verify re-checks a run without changing it: every line of events.jsonl
// (strict envelope, canonical data, digest, hash chain, contiguous revs,
// unique ids, batch structure), the validated-prefix cache
// (events.jsonl.idx: a fault with File set when it exists but is not one,
// or when a stream without other faults does not match it; what it records
// as committed is never reported as a torn tail), then
// every artifact referenced from event data (any JSON object with a
// "digest": "sha256:…" member and a "size" member): present, of that size,
// hashing to that digest. After a damaged line it carries on, checking the
// next line against the damaged line's stored digest, so one edit yields one
// fault where it was made; damage that took line feeds with it (a zeroed
// sector, in the middle or before a zero tail) is one fault too, and the
// lines after it are checked from the revision the next one holds.
//
// It returns ErrRunNotFound for a missing directory and I/O errors as
// errors. When the report has faults it also returns an error wrapping the
// first fault's sentinel (ErrCorruptEventStream, ErrArtifactNotFound or
// ErrArtifactIntegrity), so a caller can simply check err.
func Verify(ctx context.Context, runDir string) (Report, error) {
	return verifyDir(ctx, OS(), runDir)
}

func verifyDir(ctx context.Context, fsys FS, runDir string) (Report, error) {
	fi, err := fsys.Stat(runDir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.IsDir()) {
		return Report{}, fmt.Errorf("%w: %s", ErrRunNotFound, runDir)
	}
	if err != nil {
		return Report{}, storageErr("stat", runDir, err)
	}
	path := filepath.Join(runDir, eventsFile)
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		rep := Report{Faults: []Fault{{Code: "CORRUPT_EVENT_STREAM", Problem: "events.jsonl is missing"}}}
		return rep, verifyError(runDir, rep)
	}
	if err != nil {
		return Report{}, storageErr("open", path, err)
	}
	defer f.Close()
	// The cache's record of what was committed is evidence against the
	// stream: a tail it covers is damage, not a torn write, and a stream
	// shorter than it lost committed events. A cache that is not one is a
	// fault of its own, and the stream is checked without evidence.
	cache, err := readCache(fsys, path)
	var ie *IndexError
	if err != nil && !errors.As(err, &ie) {
		return Report{}, err
	}
	var evidence int64
	if cache != nil {
		evidence = cache.size
	}
	rep, refs, err := verifyStream(ctx, f, path, evidence)
	if err == nil && (len(rep.Faults) > 0 || rep.TornBytes > 0 || ie != nil) {
		// Confirm under a shared lock: without it a writer in another
		// process may have been mid-append.
		if err = f.Lock(false, true); err == nil {
			rep, refs, err = verifyStream(ctx, f, path, evidence)
			f.Unlock()
		}
	}
	if err != nil {
		return Report{}, storageErr("read", path, err)
	}
	if ie == nil && cache != nil && len(rep.Faults) == 0 {
		// A stream that passes every check but not the cache's was
		// rewritten (the open refuses it the same way).
		if mismatch, err := matchCache(f, cache); err != nil {
			return Report{}, storageErr("read", path, err)
		} else if mismatch != "" {
			ie = cached{mismatch: mismatch}.mismatchError(path).(*IndexError)
		}
	}
	if ie != nil {
		rep.Faults = append([]Fault{{Code: "CORRUPT_EVENT_STREAM", File: filepath.Base(ie.Path), Problem: ie.Problem}}, rep.Faults...)
		if len(rep.Faults) > maxFaults {
			rep.Faults, rep.Truncated = rep.Faults[:maxFaults], true
		}
	}
	if err := verifyArtifacts(ctx, dirBlobs(fsys, filepath.Join(runDir, artifactsDir, blobsDir)), refs, &rep); err != nil {
		return Report{}, err
	}
	return rep, verifyError(runDir, rep)
}

func verifyError(runDir string, rep Report) error {
	if len(rep.Faults) == 0 {
		return nil
	}
	first := rep.Faults[0]
	var sentinel error
	switch first.Code {
	case "ARTIFACT_NOT_FOUND":
		sentinel = ErrArtifactNotFound
	case "ARTIFACT_INTEGRITY":
		sentinel = ErrArtifactIntegrity
	default:
		sentinel = ErrCorruptEventStream
	}
	return fmt.Errorf("%w: %s: %d fault(s), first: %s", sentinel, runDir, len(rep.Faults), first)
}

// refUse is an artifact reference found in event data.
type refUse struct {
	digest string
	size   int64
	rev    int64
}

// verifyStream checks every line of the stream file f, the validated
// prefix cache's evidence applied (see scanner.evidence).
func verifyStream(ctx context.Context, f File, path string, evidence int64) (Report, map[string]refUse, error) {
	fi, err := f.Stat()
	if err != nil {
		return Report{}, nil, fmt.Errorf("store: verify: %w", err)
	}
	return verifyLines(ctx, path, io.NewSectionReader(f, 0, fi.Size()), evidence)
}

// VerifyLines is Verify for a backend that keeps events elsewhere: lines
// yields the run's events as the lines events.jsonl would hold (in rev
// order; AppendLine makes them), name names the stream in faults and
// errors, and open returns a referenced artifact's stored bytes by digest
// (an error wrapping fs.ErrNotExist when there is none). Every line gets
// the checks Verify makes (strict envelope, canonical data, digest, hash
// chain, contiguous revs, unique ids, batch structure), then every
// artifact referenced from event data is read and re-hashed. The report
// and the error are Verify's.
func VerifyLines(ctx context.Context, name string, lines io.Reader, open BlobOpener) (Report, error) {
	rep, refs, err := verifyLines(ctx, name, lines, 0)
	if err != nil {
		return Report{}, err
	}
	if err := verifyArtifacts(ctx, open, refs, &rep); err != nil {
		return Report{}, err
	}
	return rep, verifyError(name, rep)
}

// BlobOpener returns the stored bytes of the artifact with the given
// digest ("sha256:<hex>"); an error wrapping fs.ErrNotExist says there is
// none. VerifyLines closes what it returns.
type BlobOpener func(ctx context.Context, digest string) (io.ReadCloser, error)

// dirBlobs opens blobs in the file backend's artifacts/sha256 directory.
func dirBlobs(fsys FS, dir string) BlobOpener {
	return func(_ context.Context, digest string) (io.ReadCloser, error) {
		path := filepath.Join(dir, digest[len(digestPrefix):])
		f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, storageErr("open", path, err)
		}
		return f, err
	}
}

// verifyLines checks every line r yields and collects the artifact
// references of the events that passed.
func verifyLines(ctx context.Context, path string, r io.Reader, evidence int64) (Report, map[string]refUse, error) {
	var rep Report
	st := newChainState()
	st.ids = nil
	st.byID = map[string]int64{}
	ra, _ := r.(io.ReaderAt)
	lr := newLineReader(r, 0, 256<<10)
	sc := newScanner(ctx, path, st, nil, lr)
	sc.evidence = evidence
	sc.tail = tailWhole
	refs := map[string]refUse{}
	var pending []refUse
	sc.onLine = func(env *envelope) {
		pending = appendRefs(pending, env.data, env.rev)
	}
	sc.onCommit = func(int) {
		for _, u := range pending {
			if prev, ok := refs[u.digest]; ok {
				if prev.size != u.size && len(rep.Faults) < maxFaults {
					rep.Faults = append(rep.Faults, Fault{Code: "ARTIFACT_INTEGRITY", Rev: u.rev, Line: int(u.rev), Artifact: u.digest,
						Problem: fmt.Sprintf("referenced with size %d, but rev %d references it with size %d", u.size, prev.rev, prev.size)})
				}
				continue
			}
			refs[u.digest] = u
		}
		pending = pending[:0]
	}
	for {
		res, err := sc.run()
		rep.Events += res.events
		var ce *CorruptError
		if errors.As(err, &ce) {
			if len(rep.Faults) >= maxFaults {
				rep.Truncated = true
				break
			}
			rep.Faults = append(rep.Faults, Fault{Code: "CORRUPT_EVENT_STREAM", Rev: ce.Rev, Line: ce.Line, Problem: ce.Problem})
			pending = pending[:0]
			sc.resumeAfterNULs(ra)
			sc.resync(ce.Rev)
			continue
		}
		if err != nil {
			return rep, nil, err
		}
		if res.torn {
			rep.TornBytes, rep.TornReason = res.tornEnd-st.size, res.why
		}
		break
	}
	// Stream faults first, in file order (reference-size faults were
	// appended as they were met).
	sort.SliceStable(rep.Faults, func(i, j int) bool {
		ci, cj := rep.Faults[i].Code == "CORRUPT_EVENT_STREAM", rep.Faults[j].Code == "CORRUPT_EVENT_STREAM"
		return ci && !cj
	})
	return rep, refs, nil
}

// refMarker is how a reference's digest member starts in canonical data.
var refMarker = []byte(`"digest":"sha256:`)

// appendRefs appends the artifact references in canonical event data.
func appendRefs(dst []refUse, data []byte, rev int64) []refUse {
	if !bytes.Contains(data, refMarker) {
		return dst
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return dst
	}
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			if d, ok := t["digest"].(string); ok && strings.HasPrefix(d, digestPrefix) {
				if n, ok := t["size"].(json.Number); ok {
					size, err := n.Int64()
					if err != nil {
						size = -1
					}
					dst = append(dst, refUse{digest: d, size: size, rev: rev})
				}
			}
			for _, k := range sortedKeys(t) {
				walk(t[k])
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		}
	}
	walk(v)
	return dst
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// verifyArtifacts checks each referenced blob, in digest order.
func verifyArtifacts(ctx context.Context, open BlobOpener, refs map[string]refUse, rep *Report) error {
	digests := make([]string, 0, len(refs))
	for d := range refs {
		digests = append(digests, d)
	}
	sort.Strings(digests)
	for _, d := range digests {
		if err := ctx.Err(); err != nil {
			return err
		}
		u := refs[d]
		rep.Artifacts++
		fault := func(code, problem string) {
			if len(rep.Faults) >= maxFaults {
				rep.Truncated = true
				return
			}
			rep.Faults = append(rep.Faults, Fault{Code: code, Rev: u.rev, Artifact: quoteShortIfOdd(d), Problem: problem})
		}
		hexSum, err := refHex(ArtifactRef{Digest: d, Size: u.size})
		if err != nil {
			fault("ARTIFACT_INTEGRITY", "malformed reference (digest must be sha256:<64 lower-case hex>, size a non-negative integer)")
			continue
		}
		f, err := open(ctx, d)
		if errors.Is(err, fs.ErrNotExist) {
			fault("ARTIFACT_NOT_FOUND", "no blob is stored under this digest")
			continue
		}
		if err != nil {
			return fmt.Errorf("store: verify artifact %s: %w", d, err)
		}
		h := sha256.New()
		n, err := io.Copy(h, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("store: verify artifact %s: %w", d, err)
		}
		switch {
		case n != u.size:
			fault("ARTIFACT_INTEGRITY", fmt.Sprintf("blob is %d bytes, the reference says %d", n, u.size))
		case hex.EncodeToString(h.Sum(nil)) != hexSum:
			fault("ARTIFACT_INTEGRITY", "blob does not hash to its digest")
		}
	}
	return nil
}

// quoteShortIfOdd leaves well-formed digests alone and quotes anything else.
func quoteShortIfOdd(d string) string {
	if _, ok := parseDigest([]byte(d)); ok {
		return d
	}
	return quoteShort(d)
}
