package plugin

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestCacheEntryInHugeFolios checks that a new cache entry's page cache
// can be mapped in huge pages, as the kernel maps a binary it executes
// (entryChunk): once CopyBinary has written it, mapping the entry gives
// PMD mappings wherever mapping a file written in 2 MiB writes does. The
// test is skipped where that reference gets none (a kernel or file system
// without large folios).
func TestCacheEntryInHugeFolios(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 6*entryChunk)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "src")
	// The source written in small writes, as a linker or cp might.
	writeChunks(t, src, data, 4096)
	c, err := CopyBinary("p", src, filepath.Join(dir, "cache"), CopyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	entryKB := pmdMappedKB(t, c.Path)
	// The reference is written after the entry: a kernel that could not
	// give the entry large folios for want of memory gives it none either.
	ref := filepath.Join(dir, "ref")
	writeChunks(t, ref, data, entryChunk)
	if pmdMappedKB(t, ref) == 0 {
		t.Skip("a file written in 2 MiB writes is not mapped in huge pages here")
	}
	if entryKB == 0 {
		t.Fatalf("cache entry %s: no part mapped in huge pages (a 2 MiB-written reference was)", c.Path)
	}
}

// writeChunks writes data to a new file at path in writes of n bytes.
func writeChunks(t *testing.T, path string, data []byte, n int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, n)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// pmdMappedKB maps the file at path read-only and executable, as the
// kernel maps a binary's text, touches every page and returns the
// FilePmdMapped of the mapping in /proc/self/smaps (kB).
func pmdMappedKB(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	var sum byte
	for i := 0; i < len(m); i += 4096 {
		sum += m[i]
	}
	touched = sum
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	start := strconv.FormatUint(uint64(uintptrOf(m)), 16)
	in := false
	for _, line := range bytes.Split(smaps, []byte("\n")) {
		s := string(line)
		if lo, _, ok := strings.Cut(s, "-"); ok && !strings.Contains(lo, " ") && strings.Contains(s, " ") {
			in = strings.TrimLeft(lo, "0") == start
			continue
		}
		if v, ok := strings.CutPrefix(s, "FilePmdMapped:"); in && ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	t.Fatalf("no mapping at %s in /proc/self/smaps", start)
	return 0
}

// touched keeps the reads of pmdMappedKB from being optimised away.
var touched byte

// uintptrOf returns the address of b's first byte.
func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }
