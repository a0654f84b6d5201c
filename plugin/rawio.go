package plugin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc/credentials"
)

// rawIOCreds are gRPC's TLS credentials for cfg over a connection that
// does its socket reads and writes as rawIOConn does (rawio_linux.go;
// elsewhere the connection is left as it is). The handshake and
// everything above it are credentials.NewTLS's own: mTLS on the plugin
// socket is unchanged (docs/decisions.md, "Plugin transport"). cfg is
// read at each handshake, not copied when the credentials are made: the
// host's go-plugin client adds the plugin's certificate to it once the
// plugin's handshake line has come, after the dial options were given.
type rawIOCreds struct {
	cfg *tls.Config
	// name and bound, on the host's side, are the plugin's name and the
	// bound of its TLS handshake (its start_timeout), named when a
	// handshake is not completed in time.
	name  string
	bound time.Duration
}

// tlsRawIO returns the credentials of cfg over raw socket I/O.
func tlsRawIO(cfg *tls.Config) credentials.TransportCredentials {
	return rawIOCreds{cfg: cfg}
}

// ClientHandshake implements credentials.TransportCredentials. A
// handshake that ctx's deadline ends names the plugin, the bound and the
// setting that sets it.
func (c rawIOCreds) ClientHandshake(ctx context.Context, authority string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	tc, info, err := credentials.NewTLS(c.cfg).ClientHandshake(ctx, authority, rawIO(conn))
	if err != nil && c.name != "" && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("plugin %s accepted the host's connection but did not complete the TLS handshake within %s (the plugin block's start_timeout, docs/run-file.md): %w",
			c.name, c.bound, ctx.Err())
	}
	return tc, info, err
}

// ServerHandshake implements credentials.TransportCredentials.
func (c rawIOCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return credentials.NewTLS(c.cfg).ServerHandshake(rawIO(conn))
}

// Info implements credentials.TransportCredentials.
func (c rawIOCreds) Info() credentials.ProtocolInfo {
	return credentials.NewTLS(c.cfg).Info()
}

// Clone implements credentials.TransportCredentials; the clone reads the
// same cfg.
func (c rawIOCreds) Clone() credentials.TransportCredentials { return c }

// OverrideServerName implements credentials.TransportCredentials; gRPC
// no longer calls it, and the server name is cfg's.
func (c rawIOCreds) OverrideServerName(string) error { return nil }
