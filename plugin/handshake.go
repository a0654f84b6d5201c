package plugin

import (
	"net/netip"
	"strings"
)

// ProtocolVersion is the major version of the plugin protocol, negotiated in
// the go-plugin handshake. It equals the "protocol version" in the header of
// proto/obversa/plugin/v1/plugin.proto (a test keeps them equal); any
// incompatible wire change needs a new version and a new proto package.
const ProtocolVersion = 1

// MaxMessageBytes is the largest gRPC message either side sends or accepts:
// 64 MiB (docs/writing-plugins.md). Larger messages fail with ErrMessageTooLarge.
const MaxMessageBytes = 64 << 20

// WindowBytes is the fixed HTTP/2 flow-control window, per stream and per
// connection, both sides give a plugin connection: 16 MiB, the most
// gRPC's dynamic window would grow to. A fixed window turns off gRPC's
// bandwidth estimation, whose PING and its acknowledgement cross the
// socket on every call — two more wake-ups on each side of a call that
// moves a few hundred bytes (docs/decisions.md, "Plugin transport").
const WindowBytes = 16 << 20

// HandshakeConfig is the handshake a host and its plugins share, as
// go-plugin's HandshakeConfig holds it: the protocol version and the magic
// cookie, an environment variable and its value.
type HandshakeConfig struct {
	// ProtocolVersion is the application protocol version
	// (ProtocolVersion).
	ProtocolVersion uint
	// MagicCookieKey names the variable the host sets to MagicCookieValue.
	MagicCookieKey string
	// MagicCookieValue is the value a plugin checks.
	MagicCookieValue string
}

// Handshake is the go-plugin handshake shared by the host and every plugin.
// The magic cookie only tells a binary that it was started as an Obversa
// plugin (so that running it by hand prints a friendly message); it is not a
// security measure — the pinned SHA-256 is.
var Handshake = HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "OBVERSA_PLUGIN_MAGIC_COOKIE",
	MagicCookieValue: "9b21c5bb0baf13972267b38f0da838c1fac3c57abfc5960e414c94d616c5fa9f",
}

// foreignAddress returns the address a handshake line names and true when
// the host must not dial it: a tcp address that is not a loopback IP literal
// (127.0.0.0/8 or ::1) with a port, such as a host name (which dialing
// would look up) or another machine's address. A plugin listens on a unix
// socket or on loopback (docs/writing-plugins.md); were the host to dial
// anything else, a plugin without network (docs/confinement.md) would
// reach the network through it. It returns false for any other line,
// which go-plugin then reads as it does every handshake.
func foreignAddress(line []byte) (string, bool) {
	parts := strings.Split(strings.TrimSpace(string(line)), "|")
	if len(parts) < 4 || parts[2] != "tcp" {
		return "", false
	}
	ap, err := netip.ParseAddrPort(parts[3])
	if err == nil && ap.Addr().Unmap().IsLoopback() {
		return "", false
	}
	return parts[3], true
}
