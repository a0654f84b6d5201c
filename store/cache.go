package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// The validated-prefix cache, events.jsonl.idx, lets an open of a growing
// stream fully validate only the events appended since the cache was
// written. A missing cache only costs a full validation. It never vouches
// for bytes it has not checked: the open still reads the whole cached
// prefix and compares its CRC-32C, and fully validates the last cached
// line, so any change to the prefix (a flipped bit, an edit, a truncation)
// leads to a full scan, which then names the damaged line. It is also the
// evidence of what was committed (doc.go), so a cache that exists but is
// not one, or that a stream passing the full scan does not match, refuses
// the open (*IndexError) rather than being taken for no cache: the file is
// written whole (temporary file, fsync, rename), so no crash leaves a
// damaged one.
//
// Layout (little-endian):
//
//	magic     [8]byte  "OBVIDX01"
//	size      uint64   bytes of events.jsonl covered (ends at a batch boundary)
//	rev       uint64   last rev in the covered prefix
//	lastLine  uint64   offset of the line of rev
//	crc       uint32   CRC-32C (Castagnoli) of the covered bytes
//	every     uint32   offset index spacing (indexEvery)
//	last      [32]byte digest of rev
//	nOffsets  uint64, then nOffsets × uint64 (offset of rev i*every+1)
//	nIDs      uint64 (== rev), then nIDs × uint64 (FNV-1a 64 of each id, rev order)
//	check     uint32   CRC-32C of everything before it
const (
	cacheSuffix = ".idx"
	cacheMagic  = "OBVIDX01"
	// cacheTail is how many events an open may validate past the cache
	// before it rewrites the cache, and cacheEveryAppend how many events a
	// writer appends between rewrites.
	cacheTail        = 256
	cacheEveryAppend = 4096
)

var cacheWriteMu sync.Mutex

// encodeCache serialises the state for the cache file.
func encodeCache(st *chainState) []byte {
	n := 8 + 8*3 + 4*2 + 32 + 8 + 8*len(st.offsets) + 8 + 8*len(st.idHashes) + 4
	b := make([]byte, 0, n)
	b = append(b, cacheMagic...)
	b = binary.LittleEndian.AppendUint64(b, uint64(st.size))
	b = binary.LittleEndian.AppendUint64(b, uint64(st.rev))
	b = binary.LittleEndian.AppendUint64(b, uint64(st.lastLine))
	b = binary.LittleEndian.AppendUint32(b, st.crc)
	b = binary.LittleEndian.AppendUint32(b, indexEvery)
	b = append(b, st.last[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(st.offsets)))
	for _, o := range st.offsets {
		b = binary.LittleEndian.AppendUint64(b, uint64(o))
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(len(st.idHashes)))
	for _, h := range st.idHashes {
		b = binary.LittleEndian.AppendUint64(b, h)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// writeCache replaces the cache file atomically: a temporary file,
// fsynced, renamed over the cache. The fsync means that whatever name a
// crash leaves in place holds a whole cache (an old or the new one), so a
// damaged cache is never a crash's doing. The directory is not fsynced:
// losing the rename only leaves the older cache, which describes bytes
// that were fdatasync'd before it was written. The temporary file is named
// for the writing process, so that one left by a process that died
// mid-write can be recognised and removed.
func writeCache(fsys FS, eventsPath string, data []byte) error {
	cacheWriteMu.Lock() // one temporary file name per process
	defer cacheWriteMu.Unlock()
	removeDeadCacheTemps(fsys, eventsPath)
	tmpName := fmt.Sprintf("%s%s.tmp-%d", eventsPath, cacheSuffix, os.Getpid())
	tmp, err := fsys.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	if werr == nil {
		werr = tmp.Sync()
	}
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = fsys.Rename(tmpName, eventsPath+cacheSuffix)
	}
	if werr != nil {
		fsys.Remove(tmpName)
	}
	return werr
}

// removeDeadCacheTemps removes cache temporary files of processes that no
// longer exist.
func removeDeadCacheTemps(fsys FS, eventsPath string) {
	dir, prefix := filepath.Dir(eventsPath), filepath.Base(eventsPath)+cacheSuffix+".tmp-"
	ents, _ := fsys.ReadDir(dir)
	for _, e := range ents {
		t := e.Name()
		if !strings.HasPrefix(t, prefix) {
			continue
		}
		pid, err := strconv.Atoi(t[len(prefix):])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if _, alive := processStartTime(pid); !alive {
			fsys.Remove(filepath.Join(dir, t))
		}
	}
}

// cacheHead is the length of a cache file's fixed fields, and cacheMinLen
// that of the smallest well-formed cache: the fixed fields, one offset and
// one id hash with their counts, and the check.
const (
	cacheHead   = 8 + 8*3 + 4*2 + 32
	cacheMinLen = cacheHead + 8 + 8 + 8 + 8 + 4
)

// decodeCache parses a cache file; it checks only the file's own
// consistency. problem says what is wrong when the bytes are not a cache
// this build wrote ("" when they are); the cache is always written whole
// (temporary file, fsync, rename), so no crash leaves one half-written.
func decodeCache(b []byte) (st *chainState, problem string) {
	switch {
	case len(b) == 0:
		return nil, "the file is empty"
	case len(b) < 8 || string(b[:8]) != cacheMagic:
		if len(b) >= 6 && string(b[:6]) == cacheMagic[:6] {
			return nil, fmt.Sprintf("format version %q is not %q, the one this build reads", b[6:min(len(b), 8)], cacheMagic[6:])
		}
		return nil, fmt.Sprintf("it does not start with %q (it is not an index)", cacheMagic)
	case len(b) < cacheMinLen:
		return nil, fmt.Sprintf("it is %d bytes, shorter than the smallest index (%d)", len(b), cacheMinLen)
	}
	body, check := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != check {
		return nil, "its checksum does not match its contents (the file was changed or cut short)"
	}
	le := binary.LittleEndian
	st = &chainState{} // ids: indexed when first needed (indexIDs)
	st.size = int64(le.Uint64(b[8:]))
	st.rev = int64(le.Uint64(b[16:]))
	st.lastLine = int64(le.Uint64(b[24:]))
	st.crc = le.Uint32(b[32:])
	copy(st.last[:], b[40:72])
	if problem := checkCacheHead(st, le.Uint32(b[36:])); problem != "" {
		return nil, problem
	}
	p := cacheHead
	nOff := le.Uint64(b[p:])
	p += 8
	if want := uint64((st.rev + indexEvery - 1) / indexEvery); nOff != want || uint64(len(body)-p) < nOff*8+8 {
		return nil, fmt.Sprintf("it holds %d line offsets for %d events, want %d", nOff, st.rev, want)
	}
	st.offsets = make([]int64, nOff)
	for i := range st.offsets {
		o := int64(le.Uint64(b[p:]))
		p += 8
		switch {
		case i == 0 && o != 0:
			return nil, fmt.Sprintf("line offset 1 is %d, want 0", o)
		case i > 0 && o <= st.offsets[i-1]:
			return nil, fmt.Sprintf("line offset %d (%d) does not follow offset %d (%d): offsets must increase", i+1, o, i, st.offsets[i-1])
		case o > st.lastLine:
			return nil, fmt.Sprintf("line offset %d (%d) is past the last line's offset (%d)", i+1, o, st.lastLine)
		}
		st.offsets[i] = o
	}
	nIDs := le.Uint64(b[p:])
	p += 8
	if nIDs != uint64(st.rev) || uint64(len(body)-p) != nIDs*8 {
		return nil, fmt.Sprintf("it holds %d id hashes in %d bytes for %d events, want one of 8 bytes per event", nIDs, len(body)-p, st.rev)
	}
	st.idHashes = make([]uint64, nIDs)
	for i := range st.idHashes {
		st.idHashes[i] = le.Uint64(b[p:])
		p += 8
	}
	return st, ""
}

// checkCacheHead checks the fixed fields of a decoded cache.
func checkCacheHead(st *chainState, every uint32) string {
	switch {
	case every != indexEvery:
		return fmt.Sprintf("its offset spacing is %d, want %d", every, indexEvery)
	case st.rev < 1 || st.rev > maxSafeInt:
		return fmt.Sprintf("its last revision %d is out of range", st.rev)
	case st.size <= 0 || st.size < st.rev:
		return fmt.Sprintf("its size %d bytes cannot hold %d events", st.size, st.rev)
	case st.lastLine < 0 || st.lastLine >= st.size:
		return fmt.Sprintf("its last line's offset %d is outside its %d bytes", st.lastLine, st.size)
	}
	return ""
}

// cached is what the cache file tells an open.
type cached struct {
	// st is the validated prefix the cache records, checked against the
	// stream; nil when there is no cache or it does not match.
	st *chainState
	// evidence is how many bytes of the stream the cache recorded as
	// committed, whether or not the stream still matches it (0 without a
	// cache): the cache is written only after those bytes were
	// fdatasync'd, so a shorter or damaged stream lost committed events.
	evidence int64
	// mismatch says how a cache that decoded disagrees with the stream
	// ("" when it matches, or when the stream is shorter than it, which
	// the scan reports). The scan then names any damaged line; if it finds
	// none, the stream was rewritten and the open is refused all the same.
	mismatch string
}

// mismatchError is the refusal of a stream every line of which validates
// but which a readable cache does not match.
func (c cached) mismatchError(path string) error {
	return &IndexError{Path: path + cacheSuffix, Problem: fmt.Sprintf(
		"it does not match events.jsonl (%s), although every line of events.jsonl validates: the events it covers were rewritten or replaced", c.mismatch)}
}

// loadCache reads the cache of the stream f and checks it against the
// stream: the CRC-32C of the whole covered prefix, and a full validation of
// its last line. A writable open (index) also builds the id index and
// refuses a cache that records one id at two revs; a read-only one leaves
// that to the first line it validates past the cache (ensureIDs), since
// only a duplicate check uses the index and a handle that never appends
// may never check one. It returns an *IndexError when the cache exists
// but is not one (decodeCache), and a *StorageError when it or f cannot
// be read; no cache at all is no error.
func loadCache(fsys FS, f File, path string, fileSize int64, index bool) (cached, error) {
	st, err := readCache(fsys, path)
	if st == nil || err != nil {
		return cached{}, err
	}
	st.idsFrom = path + cacheSuffix
	c := cached{evidence: st.size}
	if st.size > fileSize {
		return c, nil
	}
	mismatch, err := matchCache(f, st)
	if err != nil {
		return c, storageErr("read", path, err)
	}
	if mismatch != "" {
		c.mismatch = mismatch
		return c, nil
	}
	if index {
		if c.mismatch, err = st.indexIDs(f); err != nil {
			return c, storageErr("read", path, err)
		}
	}
	if c.mismatch == "" {
		c.st = st
	}
	return c, nil
}

// readCache reads and decodes the cache of the stream at path: nil and no
// error when there is none, an *IndexError when the file is not a cache,
// a *StorageError saying how to move it aside when it is not a regular
// file.
func readCache(fsys FS, path string) (*chainState, error) {
	name := path + cacheSuffix
	b, err := readFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		// A directory or pipe in its place is refused with the fix the
		// damaged index's error gives (IndexError): nothing else is lost.
		return nil, notFileErr("read", name, err, fmt.Sprintf("the index must be a regular file: move it aside (mv %s %s.bad) "+
			"and the next open rebuilds it from events.jsonl", name, name))
	}
	st, problem := decodeCache(b)
	if problem != "" {
		return nil, &IndexError{Path: name, Problem: problem}
	}
	return st, nil
}

// matchCache checks a decoded cache against the stream f, which is at
// least st.size bytes long: the CRC-32C of the covered prefix, and a full
// validation of its last line. It returns what does not match ("" when
// all does).
func matchCache(f io.ReaderAt, st *chainState) (string, error) {
	crc, last, err := crcPrefix(f, st.size, st.lastLine)
	switch {
	case err != nil:
		return "", err
	case last == nil:
		return fmt.Sprintf("events.jsonl is shorter than the %d bytes it covers", st.size), nil
	case crc != st.crc:
		return fmt.Sprintf("the CRC-32C of the first %d bytes differs", st.size), nil
	case bytes.IndexByte(last, '\n') != len(last)-1:
		return fmt.Sprintf("byte %d does not start the last of the %d bytes it covers", st.lastLine, st.size), nil
	}
	env, problem := decodeLine(last[:len(last)-1], true)
	if problem != "" || env.rev != st.rev || env.batchEnd != st.rev || env.digest != st.last {
		return fmt.Sprintf("the line at byte %d is not the end of a batch at rev %d with the digest it records", st.lastLine, st.rev), nil
	}
	return "", nil
}

// crcPrefix computes the CRC-32C of f[0:size) and returns the bytes from
// lastLine to size (the last line, with its line feed); nil bytes when f
// is shorter than size.
func crcPrefix(f io.ReaderAt, size, lastLine int64) (uint32, []byte, error) {
	const chunk = 1 << 20
	// A small run's prefix is read in one piece no larger than itself.
	buf := make([]byte, min(chunk, max(size, 0)))
	var crc uint32
	var last bytes.Buffer
	for off := int64(0); off < size; {
		n := int64(chunk)
		if size-off < n {
			n = size - off
		}
		m, err := f.ReadAt(buf[:n], off)
		if m < int(n) {
			if err == nil || errors.Is(err, io.EOF) {
				return 0, nil, nil // shorter than the cache says
			}
			return 0, nil, err
		}
		crc = crc32.Update(crc, castagnoli, buf[:n])
		if end := off + n; end > lastLine {
			from := max(lastLine-off, 0)
			last.Write(buf[from:n])
		}
		off += n
	}
	return crc, last.Bytes(), nil
}
