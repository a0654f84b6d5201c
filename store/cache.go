package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// The validated-prefix cache, events.jsonl.idx, lets an open of a growing
// stream fully validate only the events appended since the cache was
// written. It is a cache: a missing, stale or damaged file only costs a full
// validation. It never vouches for bytes it has not checked: the open still
// reads the whole cached prefix and compares its CRC-32C, and fully
// validates the last cached line, so any change to the prefix (a flipped
// bit, an edit, a truncation) falls back to a full scan, which then names
// the damaged line.
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

// writeCache replaces the cache file atomically (temporary file, rename).
// It does not fsync: losing the cache only costs a full validation, and
// whatever of it survives a crash describes only bytes that were
// fdatasync'd before it was written. The temporary file is named for the
// writing process, so that one left by a process that died mid-write can
// be recognised and removed.
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

// decodeCache parses a cache file; it checks only the file's own
// consistency.
func decodeCache(b []byte) (*chainState, bool) {
	const head = 8 + 8*3 + 4*2 + 32
	if len(b) < head+8+8+4 || string(b[:8]) != cacheMagic {
		return nil, false
	}
	body, check := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != check {
		return nil, false
	}
	le := binary.LittleEndian
	st := newChainState()
	st.size = int64(le.Uint64(b[8:]))
	st.rev = int64(le.Uint64(b[16:]))
	st.lastLine = int64(le.Uint64(b[24:]))
	st.crc = le.Uint32(b[32:])
	every := le.Uint32(b[36:])
	copy(st.last[:], b[40:72])
	p := head
	if every != indexEvery || st.rev < 1 || st.rev > maxSafeInt || st.size <= 0 || st.lastLine < 0 || st.lastLine >= st.size {
		return nil, false
	}
	nOff := le.Uint64(b[p:])
	p += 8
	if nOff != uint64((st.rev+indexEvery-1)/indexEvery) || uint64(len(body)-p) < nOff*8+8 {
		return nil, false
	}
	st.offsets = make([]int64, nOff)
	for i := range st.offsets {
		st.offsets[i] = int64(le.Uint64(b[p:]))
		p += 8
		if st.offsets[i] < 0 || st.offsets[i] > st.lastLine || (i > 0 && st.offsets[i] <= st.offsets[i-1]) || (i == 0 && st.offsets[i] != 0) {
			return nil, false
		}
	}
	nIDs := le.Uint64(b[p:])
	p += 8
	if nIDs != uint64(st.rev) || uint64(len(body)-p) != nIDs*8 {
		return nil, false
	}
	st.idHashes = make([]uint64, nIDs)
	for i := range st.idHashes {
		st.idHashes[i] = le.Uint64(b[p:])
		p += 8
	}
	return st, true
}

// cached is what the cache file tells an open.
type cached struct {
	// st is the validated prefix the cache records, checked against the
	// stream; nil when the cache is missing, damaged or does not match.
	st *chainState
	// evidence is how many bytes of the stream the cache recorded as
	// committed, whether or not the stream still matches it (0 without a
	// readable cache): the cache is written only after those bytes were
	// fdatasync'd, so a shorter or damaged stream lost committed events.
	evidence int64
}

// loadCache reads the cache of the stream f and checks it against the
// stream: the CRC-32C of the whole covered prefix, and a full validation of
// its last line. err is a read error of f.
func loadCache(fsys FS, f File, path string, fileSize int64) (cached, error) {
	b, rerr := readFile(fsys, path+cacheSuffix)
	if rerr != nil {
		return cached{}, nil
	}
	st, ok := decodeCache(b)
	if !ok {
		return cached{}, nil
	}
	c := cached{evidence: st.size}
	if st.size > fileSize {
		return c, nil
	}
	crc, last, err := crcPrefix(f, st.size, st.lastLine)
	if err != nil {
		return c, storageErr("read", path, err)
	}
	if crc != st.crc || len(last) == 0 || bytes.IndexByte(last, '\n') != len(last)-1 {
		return c, nil
	}
	env, problem := decodeLine(last[:len(last)-1], true)
	if problem != "" || env.rev != st.rev || env.batchEnd != st.rev || env.digest != st.last {
		return c, nil
	}
	// Rebuild the id index; a hash shared by two revs needs their ids.
	st.ids = make(map[uint64]int64, len(st.idHashes))
	var clash []int64
	for i, h := range st.idHashes {
		if _, taken := st.ids[h]; taken {
			clash = append(clash, int64(i)+1)
			continue
		}
		st.ids[h] = int64(i) + 1
	}
	for _, r := range clash {
		h := st.idHashes[r-1]
		r0 := st.ids[h]
		id0, err0 := st.readID(f, r0)
		id1, err1 := st.readID(f, r)
		if err0 != nil || err1 != nil || id0 == id1 {
			return c, nil // unreadable, or a duplicate the cache should never hold
		}
		if st.exact == nil {
			st.exact = map[string]int64{}
		}
		if _, ok := st.exact[id0]; !ok {
			st.exact[id0] = r0
		}
		st.exact[id1] = r
	}
	c.st = st
	return c, nil
}

// crcPrefix computes the CRC-32C of f[0:size) and returns the bytes from
// lastLine to size (the last line, with its line feed).
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
				return 0, nil, nil // shorter than the cache says: not usable
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
