package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// seedStream is a small valid stream (three batches) for fuzz seeds.
func seedStream(f *testing.F) []byte {
	var buf []byte
	prev := ""
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
	for rev, batchEnd := range []int64{2, 2, 3, 5, 5} {
		data := []byte(`{"n":` + string(rune('0'+rev)) + `,"s":"x\n"}`)
		var sum [32]byte
		buf, sum = encodeLine(buf, int64(rev+1), batchEnd, "id-"+string(rune('a'+rev)), "t:x", ts, data, prev)
		prev = digestString(sum)
	}
	return buf
}

// FuzzDecodeLine: the envelope decoder never panics, and whatever it
// accepts is valid JSON that a forward parser reads the same way, and
// re-encodes to the very same bytes.
func FuzzDecodeLine(f *testing.F) {
	for _, l := range bytes.SplitAfter(seedStream(f), []byte("\n")) {
		if len(l) > 0 {
			f.Add(bytes.TrimSuffix(l, []byte("\n")))
		}
	}
	f.Add([]byte(`{"batch_end":1,"data":"\",\"id\":\"x","id":"a","prev":"","rev":1,"ts":"2026-01-02T03:04:05.006Z","type":"t","digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000"}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, line []byte) {
		orig := bytes.Clone(line)
		env, problem := decodeLine(line, true)
		if !bytes.Equal(orig, line) {
			t.Fatal("decodeLine changed its input")
		}
		if problem != "" {
			return
		}
		e := env.event()
		var m map[string]json.RawMessage
		if err := json.Unmarshal(line, &m); err != nil || len(m) != 8 {
			t.Fatalf("accepted line is not an 8-member JSON object (%v): %s", err, line)
		}
		var fwd struct {
			BatchEnd, Rev              int64
			ID, Type, TS, Prev, Digest string
		}
		for k, dst := range map[string]any{"batch_end": &fwd.BatchEnd, "rev": &fwd.Rev, "id": &fwd.ID, "type": &fwd.Type,
			"ts": &fwd.TS, "prev": &fwd.Prev, "digest": &fwd.Digest} {
			if err := json.Unmarshal(m[k], dst); err != nil {
				t.Fatalf("member %s: %v", k, err)
			}
		}
		if fwd.BatchEnd != e.BatchEnd || fwd.Rev != e.Rev || fwd.ID != e.ID || fwd.Type != e.Type ||
			fwd.TS != e.TS.Format(tsLayout) || fwd.Prev != e.Prev || fwd.Digest != e.Digest || !bytes.Equal(m["data"], e.Data) {
			t.Fatalf("forward parse %+v differs from decoded %+v", fwd, e)
		}
		again, _ := encodeLine(nil, e.Rev, e.BatchEnd, e.ID, e.Type, e.TS, e.Data, e.Prev)
		if !bytes.Equal(again, append(orig, '\n')) {
			t.Fatalf("re-encoded\n%s\nfrom\n%s", again, orig)
		}
		if _, p := decodeLine(line, false); p != "" {
			t.Fatalf("accepted with data check, refused without: %s", p)
		}
	})
}

// FuzzRecover: opening a run whose events.jsonl holds arbitrary bytes
// either fails with CORRUPT_EVENT_STREAM changing nothing, or recovers to a
// stream that reads back whole, reopens to the same revision without
// further recovery, and verifies clean.
func FuzzRecover(f *testing.F) {
	good := seedStream(f)
	f.Add(good)
	f.Add(good[:len(good)-7])
	f.Add(append(bytes.Clone(good), "\x00\x00garbage"...))
	f.Add(append(bytes.Clone(good), "{}\n"...))
	flipped := bytes.Clone(good)
	flipped[40] ^= 1
	f.Add(flipped)
	f.Add([]byte{})
	f.Add([]byte("\n"))
	f.Fuzz(func(t *testing.T, content []byte) {
		ctx := context.Background()
		dir, path := runDirWith(t, content)
		r, err := OpenRunDir(ctx, dir, Policy{})
		if err != nil {
			refusedOpen(t, err, path, content)
			return
		}
		rev := r.events.Rev()
		var n int64
		var last Event
		if err := r.events.Read(ctx, 1, func(e Event) error {
			n++
			if e.Rev != n {
				t.Fatalf("read rev %d at position %d", e.Rev, n)
			}
			last = e
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if n != rev || (rev > 0 && last.BatchEnd != rev) {
			t.Fatalf("read %d events (last batch_end %d), Rev %d", n, last.BatchEnd, rev)
		}
		after, _ := os.ReadFile(path)
		if !bytes.HasPrefix(content, after) {
			t.Fatal("recovery did more than cut a tail")
		}
		r.Close()
		tornBefore, _ := filepath.Glob(path + ".torn-*")
		reopenClean(t, dir, rev)
		tornAfter, _ := filepath.Glob(path + ".torn-*")
		if len(tornAfter) != len(tornBefore) {
			t.Fatal("a second open recovered again")
		}
	})
}

// FuzzParseLine: ParseLine never panics, and a line it accepts is exactly
// what AppendLine lays out for the event it returns.
func FuzzParseLine(f *testing.F) {
	for _, l := range bytes.SplitAfter(seedStream(f), []byte("\n")) {
		if len(l) > 0 {
			f.Add(l)
		}
	}
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := ParseLine(bytes.Clone(line))
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Problem == "" {
				t.Fatalf("error %v is not a *CorruptError with a problem", err)
			}
			return
		}
		want := bytes.TrimSuffix(line, []byte("\n"))
		if got := AppendLine(nil, e); !bytes.Equal(got, append(bytes.Clone(want), '\n')) {
			t.Fatalf("AppendLine(ParseLine(%q)) = %q", line, got)
		}
	})
}

// FuzzOpenWithCache: an open of arbitrary stream bytes beside an arbitrary
// validated-prefix cache never panics and either fails with
// CORRUPT_EVENT_STREAM changing nothing (stream, cache, no torn file), or
// recovers without cutting a byte the cache recorded as committed.
func FuzzOpenWithCache(f *testing.F) {
	good, cache := seedStreamCache(f)
	f.Add(good, cache)
	f.Add(good[:len(good)-7], cache)
	f.Add(append(bytes.Clone(good), "{\"batch_end\":9"...), cache)
	flipped := bytes.Clone(good)
	flipped[len(flipped)-20] ^= 1
	f.Add(flipped, cache)
	short := bytes.Clone(cache)
	short[9] ^= 1
	f.Add(good, short)
	f.Add(good, []byte("OBVIDX01garbage"))
	f.Add([]byte{}, cache)
	f.Fuzz(func(t *testing.T, content, idx []byte) {
		ctx := context.Background()
		dir := filepath.Join(t.TempDir(), "run")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, eventsFile)
		writeFile(t, path, content)
		writeFile(t, path+cacheSuffix, idx)
		var evidence int64
		c, problem := decodeCache(bytes.Clone(idx))
		if problem == "" {
			evidence = c.size
		}
		r, err := OpenRunDir(ctx, dir, Policy{})
		if problem != "" {
			// A cache that is not one is never taken for no cache.
			var ie *IndexError
			if !errors.As(err, &ie) || ie.Path != path+cacheSuffix {
				t.Fatalf("open beside a cache that does not decode (%s): %v, want an *IndexError naming it", problem, err)
			}
		}
		if err != nil {
			if !errors.Is(err, ErrCorruptEventStream) {
				t.Fatalf("open failed with a non-corruption error: %v", err)
			}
			torn, _ := filepath.Glob(path + ".torn-*")
			if !bytes.Equal(readBytes(t, path), content) || !bytes.Equal(readBytes(t, path+cacheSuffix), idx) || len(torn) != 0 {
				t.Fatal("a failed open changed the directory")
			}
			return
		}
		defer r.Close()
		after := readBytes(t, path)
		if !bytes.HasPrefix(content, after) {
			t.Fatal("recovery did more than cut a tail")
		}
		if int64(len(after)) < evidence {
			t.Fatalf("recovery cut the stream to %d bytes, but the cache recorded %d as committed", len(after), evidence)
		}
		n := int64(0)
		if err := r.events.Read(ctx, 1, func(e Event) error { n++; return nil }); err != nil || n != r.events.Rev() {
			t.Fatalf("read %d events of %d: %v", n, r.events.Rev(), err)
		}
	})
}

// FuzzDecodeCache: the validated-prefix cache decoder never panics; it
// either names what is wrong or returns a state that encodes back to the
// same bytes (every byte of a cache is checked, none ignored).
func FuzzDecodeCache(f *testing.F) {
	_, cache := seedStreamCache(f)
	f.Add(cache)
	f.Add([]byte{})
	f.Add([]byte("OBVIDX01garbage"))
	f.Add([]byte("OBVIDX02"))
	f.Add(cache[:len(cache)-1])
	f.Add(append(bytes.Clone(cache), 0))
	for _, off := range []int{8, 16, 24, 36, 72, 80} {
		b := bytes.Clone(cache)
		b[off] ^= 0x40
		f.Add(resealCache(b))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, problem := decodeCache(bytes.Clone(b))
		if problem != "" {
			if st != nil {
				t.Fatalf("a state came with the problem %q", problem)
			}
			return
		}
		if st == nil {
			t.Fatal("no state and no problem")
		}
		if got := encodeCache(st); !bytes.Equal(got, b) {
			t.Fatalf("decoded cache encodes to %x, not the %x it was decoded from", got, b)
		}
		for i := 1; i < len(st.offsets); i++ {
			if st.offsets[i] <= st.offsets[i-1] || st.offsets[i] > st.lastLine {
				t.Fatalf("offsets %v out of order or past the last line %d", st.offsets, st.lastLine)
			}
		}
		if st.lastLine >= st.size || int64(len(st.idHashes)) != st.rev {
			t.Fatalf("last line %d of %d bytes, %d id hashes for rev %d", st.lastLine, st.size, len(st.idHashes), st.rev)
		}
	})
}

// resealCache recomputes a cache's trailing checksum over its changed
// bytes, so that a fuzz seed reaches the field checks behind it.
func resealCache(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(b[:len(b)-4:len(b)-4], crc32.Checksum(b[:len(b)-4], castagnoli))
}

// seedStreamCache returns seedStream and the validated-prefix cache of it.
func seedStreamCache(f *testing.F) (stream, cache []byte) {
	good := seedStream(f)
	st := newChainState()
	sc := newScanner(context.Background(), "", st, bytes.NewReader(good), newLineReader(bytes.NewReader(good), 0, 1<<16))
	if _, err := sc.run(); err != nil {
		f.Fatal(err)
	}
	return good, encodeCache(st)
}

// FuzzZeroTail: whatever follows a valid stream — bytes with NULs inside
// and after lines, then a zero tail of any length — an open never loses
// an event before it, changes nothing when it refuses, agrees with a
// read-only open, and leaves a stream that reopens and verifies clean.
func FuzzZeroTail(f *testing.F) {
	good := seedStream(f)
	lines := bytes.SplitAfter(good, newline)
	f.Add([]byte{}, uint16(0))
	f.Add([]byte{}, uint16(4096))
	f.Add([]byte("\x00\x00garbage"), uint16(100))
	f.Add(lines[0][:30], uint16(600))
	f.Add(append(make([]byte, 512-len(good)%512), lines[1]...), uint16(512))
	f.Add(append(make([]byte, 7), lines[2]...), uint16(9))
	f.Add([]byte("{\"batch_end\":6,\x00\x00\n"), uint16(1))
	f.Fuzz(func(t *testing.T, tail []byte, pad uint16) {
		ctx := context.Background()
		content := append(append(bytes.Clone(good), tail...), make([]byte, pad)...)
		dir, path := runDirWith(t, content)
		ro, roErr := OpenRunDirReadOnly(ctx, dir)
		r, err := OpenRunDir(ctx, dir, Policy{})
		if (err == nil) != (roErr == nil) {
			t.Fatalf("the writable open says %v, the read-only open %v", err, roErr)
		}
		if err != nil {
			refusedOpen(t, err, path, content)
			return
		}
		defer ro.Close()
		rev := r.events.Rev()
		if rev < 5 || ro.events.Rev() != rev {
			t.Fatalf("rev %d (read-only %d): events before the tail were lost", rev, ro.events.Rev())
		}
		after, _ := os.ReadFile(path)
		if !bytes.HasPrefix(content, after) || !bytes.HasPrefix(after, good) {
			t.Fatal("recovery did more than cut a tail")
		}
		r.Close()
		reopenClean(t, dir, rev)
	})
}

// refusedOpen checks that an open of content at path failed only with
// corruption and changed nothing.
func refusedOpen(t *testing.T, err error, path string, content []byte) {
	t.Helper()
	var ce *CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("open failed with a non-corruption error: %v", err)
	}
	after, _ := os.ReadFile(path)
	torn, _ := filepath.Glob(path + ".torn-*")
	if !bytes.Equal(after, content) || len(torn) != 0 {
		t.Fatal("a failed open changed the directory")
	}
}

// reopenClean checks that the recovered run in dir reopens at rev and
// verifies with no torn bytes (and the torn-tail check of a second open
// is the caller's).
func reopenClean(t *testing.T, dir string, rev int64) {
	t.Helper()
	r2, err := OpenRunDir(context.Background(), dir, Policy{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if got := r2.events.Rev(); got != rev {
		t.Fatalf("reopen rev %d, want %d", got, rev)
	}
	r2.Close()
	rep, err := Verify(context.Background(), dir)
	if err != nil || rep.TornBytes != 0 || rep.Events != rev {
		t.Fatalf("Verify after recovery: %v, %+v", err, rep)
	}
}

// runDirWith makes a run directory whose events.jsonl holds content and
// returns it and the file's path.
func runDirWith(t *testing.T, content []byte) (dir, path string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, eventsFile)
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, path
}
