package plugin_test

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/plugin/pluginhost"
)

func TestProtocolVersionMatchesProto(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("proto/obversa/plugin/v1/plugin.proto")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^// protocol version: (\d+)$`).FindSubmatch(src)
	if m == nil {
		t.Fatal(`plugin.proto has no "// protocol version: N" header line`)
	}
	v, _ := strconv.Atoi(string(m[1]))
	if v != plugin.ProtocolVersion {
		t.Errorf("plugin.proto says protocol version %d, ProtocolVersion = %d", v, plugin.ProtocolVersion)
	}
	if plugin.Handshake.ProtocolVersion != uint(plugin.ProtocolVersion) {
		t.Errorf("Handshake.ProtocolVersion = %d", plugin.Handshake.ProtocolVersion)
	}
	if h := pluginhost.Handshake; h.ProtocolVersion != plugin.Handshake.ProtocolVersion ||
		h.MagicCookieKey != plugin.Handshake.MagicCookieKey || h.MagicCookieValue != plugin.Handshake.MagicCookieValue {
		t.Errorf("the host's go-plugin handshake %+v is not plugin.Handshake %+v", h, plugin.Handshake)
	}
}
