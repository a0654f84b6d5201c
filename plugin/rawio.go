package plugin

import (
	"context"
	"crypto/tls"
	"net"

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
}

// tlsRawIO returns the credentials of cfg over raw socket I/O.
func tlsRawIO(cfg *tls.Config) credentials.TransportCredentials {
	return rawIOCreds{cfg: cfg}
}

// ClientHandshake implements credentials.TransportCredentials.
func (c rawIOCreds) ClientHandshake(ctx context.Context, authority string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return credentials.NewTLS(c.cfg).ClientHandshake(ctx, authority, rawIO(conn))
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
