//go:build !windows

package plugin

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// socketTries bounds the names listenUnix tries for the plugin's socket.
const socketTries = 16

// listenLocal is where a plugin listens here: a unix socket in dir
// (listenUnix).
func listenLocal(dir string) (net.Listener, error) { return listenUnix(dir) }

// listenUnix listens on a fresh socket "plugin<digits>" in dir (the
// system's temporary directory when empty), as go-plugin names it. The
// socket is removed when the listener closes.
func listenUnix(dir string) (net.Listener, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	var b [4]byte
	for range socketTries {
		_, _ = rand.Read(b[:])
		path := filepath.Join(dir, "plugin"+strconv.FormatUint(uint64(binary.LittleEndian.Uint32(b[:])), 10))
		l, err := net.Listen("unix", path)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("plugin: listening: %w", err)
		}
	}
	return nil, fmt.Errorf("plugin: no free socket name in %s after %d tries: %w", dir, socketTries, syscall.EADDRINUSE)
}
