package plugin_test

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/x509"
	"os/exec"
	"testing"

	"github.com/obversa/obversa/plugin"
)

// TestServeAnswersMutualTLSOnP256 starts a Go plugin (the test binary) by
// hand as a host offering mutual TLS would: its handshake line carries a
// P-256 certificate of its own for localhost, not go-plugin's P-521 one.
// TestLaunchMutualTLS shows that the host trusts it and talks to it.
func TestServeAnswersMutualTLSOnP256(t *testing.T) {
	t.Parallel()
	_, clientPEM, err := plugin.ClientCertificate()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testBin)
	cmd.Env = append(plugin.HandshakeEnv([]int{plugin.ProtocolVersion}, clientPEM), modeEnv+"=both", "PLUGIN_UNIX_SOCKET_DIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the handshake line: %v", err)
	}
	h, err := plugin.ParseHandshakeLine(line)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(h.ServerCert)
	if err != nil {
		t.Fatalf("handshake line %q: server certificate: %v", line, err)
	}
	key, ok := cert.PublicKey.(*ecdsa.PublicKey)
	if !ok || key.Curve.Params().Name != "P-256" {
		t.Errorf("the plugin's certificate has a %v key, want ECDSA P-256", cert.PublicKeyAlgorithm)
	}
	if err := cert.VerifyHostname("localhost"); err != nil {
		t.Errorf("the plugin's certificate: %v", err)
	}
}
