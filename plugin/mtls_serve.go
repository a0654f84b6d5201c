package plugin

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"io"
	"os"
	"strings"
)

// serverTLS is the plugin's side of the host's mutual TLS, made here on
// P-256 where go-plugin's automatic mTLS would make a P-521 key
// (docs/decisions.md, "Plugin transport"): it returns the tls.Config to
// serve with — as go-plugin's own: this certificate, only the host's
// certificate clientPEM accepted as a client — and the certificate's DER,
// which the handshake line must carry for the host to trust it. ok is
// false when clientPEM holds no certificate; go-plugin then does as it
// always did.
func serverTLS(clientPEM string) (cfg *tls.Config, certDER []byte, ok bool) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(clientPEM)) {
		return nil, nil, false
	}
	cert, _, err := newCertificate()
	if err != nil {
		return nil, nil, false
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		RootCAs:      pool,
		MinVersion:   tls.VersionTLS12,
		ServerName:   "localhost",
	}, cert.Certificate[0], true
}

// certInHandshake makes the handshake line go-plugin is about to print
// carry certDER: go-plugin puts a server certificate in the line's sixth
// field only when it made the certificate itself, so until the line has
// passed, os.Stdout is a pipe whose first line is copied to the real
// standard output with certDER (base64 without padding, as go-plugin
// writes it) in an empty sixth field. Whatever follows on the pipe
// passes unchanged; go-plugin points os.Stdout elsewhere right after the
// line. It returns false, changing nothing, when no pipe can be made.
func certInHandshake(certDER []byte) bool {
	out := os.Stdout
	r, w, err := os.Pipe()
	if err != nil {
		return false
	}
	os.Stdout = w
	go func() {
		defer r.Close()
		br := bufio.NewReader(r)
		line, err := br.ReadString('\n')
		_, _ = io.WriteString(out, withServerCert(line, certDER))
		if err != nil {
			return
		}
		// go-plugin is done with the pipe once the line is out.
		_ = w.Close()
		_, _ = io.Copy(out, br)
	}()
	return true
}

// withServerCert returns handshake line with certDER as its sixth field
// when that field is present and empty, and line unchanged otherwise.
func withServerCert(line string, certDER []byte) string {
	body, nl := strings.CutSuffix(line, "\n")
	parts := strings.Split(body, "|")
	if len(parts) < 6 || parts[5] != "" {
		return line
	}
	parts[5] = base64.RawStdEncoding.EncodeToString(certDER)
	body = strings.Join(parts, "|")
	if nl {
		body += "\n"
	}
	return body
}
