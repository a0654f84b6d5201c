package plugin

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"
)

// ClientCertificate makes the host's certificate for one plugin launch
// (go-plugin's automatic mTLS, docs/writing-plugins.md#automatic-mtls): a
// fresh self-signed ECDSA P-256 certificate for "localhost" — a CA, with
// extended key usage client and server auth, as go-plugin's own — and the
// same certificate in PEM, for the plugin's PLUGIN_CLIENT_CERT. go-plugin
// makes it on a P-521 key, about fifty times the CPU, for a key that lives
// as long as one plugin process (docs/decisions.md, "Plugin transport").
// Errors are those of the key generation or the signature.
func ClientCertificate() (tls.Certificate, []byte, error) {
	return newCertificate()
}

// newCertificate makes a fresh self-signed P-256 certificate for
// "localhost" on go-plugin's automatic-mTLS template, and its PEM.
func newCertificate() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	sn, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "localhost", Organization: []string{"Obversa"}},
		DNSNames:              []string{"localhost"},
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyAgreement | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		SerialNumber:          sn,
		NotBefore:             now.Add(-30 * time.Second),
		// As go-plugin's: a plugin process may outlive any shorter bound.
		NotAfter: now.Add(262980 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("mTLS certificate: %w", err)
	}
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	return cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// clientTLS is the host's side of one launch's mTLS: the tls.Config it
// dials the plugin with (go-plugin adds the certificate the plugin answers
// with in its handshake line as the only root) and the PLUGIN_CLIENT_CERT
// variable that asks the plugin for mTLS and names the one client it
// accepts.
func clientTLS() (*tls.Config, string, error) {
	cert, certPEM, err := ClientCertificate()
	if err != nil {
		return nil, "", err
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
		ServerName:   "localhost",
	}, EnvClientCert + "=" + string(certPEM), nil
}
