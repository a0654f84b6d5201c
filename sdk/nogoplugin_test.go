package sdk_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPluginsDoNotLinkGoPlugin: no Go plugin of this module — the bundled
// plugins, the Go example plugin — nor package sdk itself imports
// hashicorp/go-plugin, directly or through package plugin: go-plugin is
// the host's (plugin/pluginhost; docs/decisions.md, "Go plugins serve
// go-plugin's protocol themselves").
func TestPluginsDoNotLinkGoPlugin(t *testing.T) {
	pkgs := []string{".", "../plugin", "../plugins/mock-engine", "../plugins/cmd-engine", "../examples/plugins/guard"}
	out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(deps) < 50 {
		t.Fatalf("go list -deps names %d packages:\n%s", len(deps), out)
	}
	for _, p := range deps {
		if strings.HasPrefix(p, "github.com/hashicorp/go-plugin") || p == "github.com/hashicorp/yamux" {
			t.Errorf("%s is linked into a plugin", p)
		}
	}
}
