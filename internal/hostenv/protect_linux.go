package hostenv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Protect marks this process non-dumpable and rewrites its initial
// environment block so that /proc/<pid>/environ shows only Allowed
// variables. It returns an error when either step fails; the process's
// own view of its environment (os.Environ) does not change.
func Protect() error {
	if err := scrub(); err != nil {
		return fmt.Errorf("hiding the environment: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("marking the process non-dumpable: %w", err)
	}
	return nil
}

// scrub overwrites the environment block between env_start and env_end
// (fields 50 and 51 of /proc/self/stat) through /proc/self/mem: the
// allowed entries first, NUL bytes after them.
func scrub() error {
	start, end, err := envBounds()
	if err != nil {
		return err
	}
	if end <= start {
		return nil
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer mem.Close()
	block := make([]byte, end-start)
	if _, err := mem.ReadAt(block, int64(start)); err != nil {
		return fmt.Errorf("reading the environment block: %w", err)
	}
	var kept []byte
	for _, kv := range bytes.Split(block, []byte{0}) {
		if name, _, ok := bytes.Cut(kv, []byte("=")); ok && Allowed(string(name)) {
			kept = append(append(kept, kv...), 0)
		}
	}
	out := make([]byte, len(block))
	copy(out, kept)
	if _, err := mem.WriteAt(out, int64(start)); err != nil {
		return fmt.Errorf("rewriting the environment block: %w", err)
	}
	return nil
}

// envBounds reads env_start and env_end from /proc/self/stat.
func envBounds() (start, end uint64, err error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, errors.New("malformed /proc/self/stat")
	}
	// Fields after the name start at field 3; env_start is field 50.
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 49 {
		return 0, 0, errors.New("/proc/self/stat has no env_start/env_end (kernel before 3.5)")
	}
	if start, err = strconv.ParseUint(f[47], 10, 64); err == nil {
		end, err = strconv.ParseUint(f[48], 10, 64)
	}
	return start, end, err
}
