package plugin

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
)

// serverTLS is the plugin's side of the host's mutual TLS (go-plugin's
// automatic mTLS, on P-256 where go-plugin makes a P-521 key;
// docs/decisions.md, "Plugin transport"): the tls.Config to serve with —
// a fresh certificate of the plugin's own, only the host's certificate
// clientPEM accepted as a client — and the certificate's DER, which the
// handshake line carries for the host to trust it. clientPEM without a
// certificate is an error wrapping ErrServeConfig; a failed key
// generation or signature is returned as it is.
func serverTLS(clientPEM string) (cfg *tls.Config, certDER []byte, err error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(clientPEM)) {
		return nil, nil, fmt.Errorf("plugin: %s holds no PEM certificate: %w", EnvClientCert, ErrServeConfig)
	}
	cert, _, err := newCertificate()
	if err != nil {
		return nil, nil, err
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		RootCAs:      pool,
		MinVersion:   tls.VersionTLS12,
		ServerName:   "localhost",
	}, cert.Certificate[0], nil
}
