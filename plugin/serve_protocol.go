package plugin

import (
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
)

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
	ep.lis, err = listenLocal(socketDir)
	return ep, err
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
