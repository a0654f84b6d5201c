package plugin

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/obversa/obversa/internal/runecut"
)

// The go-plugin handshake as a plugin in any language sees it. The host
// sets these environment variables (go-plugin v1, client.go) and reads one
// line from the plugin's stdout. HandshakeEnv and ParseHandshakeLine spell
// them out for the conformance kit and for docs/writing-plugins.md; LaunchWith
// itself leaves both to go-plugin.

// CoreProtocolVersion is go-plugin's own protocol version, the first field
// of the handshake line.
const CoreProtocolVersion = 1

// Environment variables the host sets for a plugin's handshake.
const (
	// EnvProtocolVersions lists the application protocol versions the host
	// speaks, comma-separated; the plugin answers with the highest one it
	// speaks too.
	EnvProtocolVersions = "PLUGIN_PROTOCOL_VERSIONS"
	// EnvClientCert is the host's client certificate (PEM) when it offers
	// automatic mTLS: the plugin must then serve TLS with a certificate of
	// its own, require this one from the client, and print its own (DER,
	// base64 without padding) as the sixth field of the handshake line.
	EnvClientCert = "PLUGIN_CLIENT_CERT"
	// EnvMinPort and EnvMaxPort bound the TCP port of a plugin that
	// listens on TCP rather than a Unix socket.
	EnvMinPort = "PLUGIN_MIN_PORT"
	EnvMaxPort = "PLUGIN_MAX_PORT" // see EnvMinPort
)

// Default TCP port range go-plugin offers when the host sets none.
const (
	defaultMinPort = 10000
	defaultMaxPort = 25000
)

// HandshakeEnv returns the environment variables the host adds to a
// plugin's environment for its handshake ("KEY=value"): the magic cookie
// (Handshake), the offered protocol versions, the TCP port range and, when
// clientCertPEM is not empty, the client certificate that asks for
// automatic mTLS. LaunchWith gets the same from go-plugin; the conformance kit
// uses this to start a plugin by hand.
func HandshakeEnv(versions []int, clientCertPEM []byte) []string {
	vs := make([]string, len(versions))
	for i, v := range versions {
		vs[i] = strconv.Itoa(v)
	}
	env := []string{
		Handshake.MagicCookieKey + "=" + Handshake.MagicCookieValue,
		fmt.Sprintf("%s=%d", EnvMinPort, defaultMinPort),
		fmt.Sprintf("%s=%d", EnvMaxPort, defaultMaxPort),
		EnvProtocolVersions + "=" + strings.Join(vs, ","),
	}
	if len(clientCertPEM) > 0 {
		env = append(env, EnvClientCert+"="+string(clientCertPEM))
	}
	return env
}

// HandshakeLine is the first line a plugin prints on stdout:
//
//	CORE-VERSION|APP-VERSION|NETWORK|ADDRESS|PROTOCOL[|SERVER-CERT[|MUX]]
//
// for example "1|1|unix|/tmp/plugin123|grpc|MIIB…".
type HandshakeLine struct {
	// CoreVersion must be CoreProtocolVersion.
	CoreVersion int
	// AppVersion is the negotiated application protocol version.
	AppVersion int
	// Network is "unix" or "tcp"; Address is the socket path or host:port.
	Network string
	Address string
	// Protocol is "grpc" (Obversa plugins never speak net/rpc).
	Protocol string
	// ServerCert is the plugin's TLS certificate (DER) when the host
	// offered automatic mTLS; nil when the field is absent or empty.
	ServerCert []byte
	// Multiplex is the optional seventh field ("true" when the plugin
	// supports go-plugin's broker multiplexing).
	Multiplex bool
}

// maxLineEcho and maxFieldEcho bound, in bytes, the line and the field a
// refusal quotes: a plugin that writes a megabyte of noise to stdout gets
// an error a person can read.
const (
	maxLineEcho  = 200
	maxFieldEcho = 64
)

// ParseHandshakeLine parses line (without its newline; surrounding white
// space is ignored) as a handshake line and checks what the host requires:
// five to seven fields, CoreProtocolVersion, a positive application
// version, a "unix" or "tcp" network with a non-empty address, protocol
// "grpc", and a certificate field that decodes as base64 without padding.
// It does not parse the certificate itself. Errors wrap ErrHandshake and
// quote what was wrong.
func ParseHandshakeLine(line string) (HandshakeLine, error) {
	bad := func(format string, args ...any) (HandshakeLine, error) {
		return HandshakeLine{}, fmt.Errorf("handshake line %q: %s: %w", truncate(line, maxLineEcho), fmt.Sprintf(format, args...), ErrHandshake)
	}
	line = strings.TrimSpace(line)
	parts := strings.Split(line, "|")
	if len(parts) < 5 || len(parts) > 7 {
		return bad("has %d fields separated by '|', want 5 to 7", len(parts))
	}
	var h HandshakeLine
	var err error
	if h.CoreVersion, err = strconv.Atoi(parts[0]); err != nil || h.CoreVersion != CoreProtocolVersion {
		return bad("core protocol version %q, want %d", truncate(parts[0], maxFieldEcho), CoreProtocolVersion)
	}
	if h.AppVersion, err = strconv.Atoi(parts[1]); err != nil || h.AppVersion < 1 {
		return bad("application protocol version %q is not a positive integer", truncate(parts[1], maxFieldEcho))
	}
	h.Network, h.Address, h.Protocol = parts[2], parts[3], parts[4]
	switch {
	case h.Network != "unix" && h.Network != "tcp":
		return bad("network %q, want unix or tcp", truncate(h.Network, maxFieldEcho))
	case h.Address == "":
		return bad("empty address")
	case h.Protocol != "grpc":
		return bad("protocol %q, want grpc", truncate(h.Protocol, maxFieldEcho))
	}
	if len(parts) >= 6 && parts[5] != "" {
		if h.ServerCert, err = base64.RawStdEncoding.DecodeString(parts[5]); err != nil {
			return bad("server certificate is not base64 without padding: %v", err)
		}
	}
	if len(parts) == 7 {
		if h.Multiplex, err = strconv.ParseBool(parts[6]); err != nil {
			return bad("multiplex field %q is not a boolean", truncate(parts[6], maxFieldEcho))
		}
	}
	return h, nil
}

// truncate bounds text echoed in an error to n bytes, cut on a rune
// boundary (so a multibyte line is never quoted as broken escapes) and
// marked with "…" where it was cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return runecut.Prefix(s, n) + "…"
}
