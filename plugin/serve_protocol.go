package plugin

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
)

// socketTries bounds the names listen tries for the plugin's socket.
const socketTries = 16

// endpoint is where a plugin serves: its listener and, when the host asked
// for mutual TLS, the TLS to serve with and the certificate the handshake
// line names.
type endpoint struct {
	lis     net.Listener
	tls     *tls.Config
	certDER []byte
}

// listen makes the plugin's endpoint: a unix socket in socketDir (the
// system's temporary directory when empty; loopback TCP on Windows) and,
// when clientPEM is set, the TLS that answers it (serverTLS).
func listen(clientPEM, socketDir string) (endpoint, error) {
	var ep endpoint
	if clientPEM != "" {
		cfg, der, err := serverTLS(clientPEM)
		if err != nil {
			return ep, err
		}
		ep.tls, ep.certDER = cfg, der
	}
	var err error
	if runtime.GOOS == "windows" {
		ep.lis, err = net.Listen("tcp", "127.0.0.1:0")
	} else {
		ep.lis, err = listenUnix(socketDir)
	}
	return ep, err
}

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

// handshakeLine is the line a plugin prints on stdout for the host to
// connect: core protocol version, app protocol version, network, address,
// protocol and the server certificate (base64 of its DER without padding,
// empty without TLS), "|"-separated, ending in a newline.
func handshakeLine(addr net.Addr, certDER []byte) string {
	return fmt.Sprintf("%d|%d|%s|%s|grpc|%s\n", CoreProtocolVersion, ProtocolVersion,
		addr.Network(), addr.String(), base64.RawStdEncoding.EncodeToString(certDER))
}

// serveProtocol prints the handshake line for ep, points os.Stdout and
// os.Stderr at the stdio service, and serves s on ep's listener until the
// host's Shutdown stops it. SIGINT, which reaches the plugin with the
// host's own, is ignored: the host decides when a plugin ends.
func serveProtocol(s *grpc.Server, ep endpoint, logger hclog.Logger) error {
	stdio, err := newStdioService()
	if err != nil {
		logger.Error("plugin cannot serve", "error", err)
		return err
	}
	registerController(s)
	registerStdio(s, stdio)
	if _, err := os.Stdout.WriteString(handshakeLine(ep.lis.Addr(), ep.certDER)); err != nil {
		return fmt.Errorf("plugin: writing the handshake line: %w", err)
	}
	stdio.redirect()
	ignoreInterrupts(logger)
	if err := s.Serve(ep.lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		logger.Error("plugin server ended", "error", err)
		return fmt.Errorf("plugin: serving: %w", err)
	}
	return nil
}

// ignoreInterrupts swallows SIGINT for the rest of the process's life.
func ignoreInterrupts(logger hclog.Logger) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt)
	go func() {
		for range ch {
			logger.Trace("plugin received an interrupt signal, ignoring it")
		}
	}()
}
