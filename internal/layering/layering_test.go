package layering

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/obversa/obversa"

// allowed maps a package prefix (relative to the module) to the prefixes
// of ours it may import, directly or not (docs/architecture.md#packages-and-imports); store/pgstore, the
// record in PostgreSQL, imports only store (and, through it, the leaf
// internal/regfile, which opens the file backend's files). internal/proc is a
// leaf (standard library and x/sys only) shared by the host and the SDK's
// command runner, and used by plugin to stop what a plugin started; so is
// internal/cgroup, shared by plugin confinement and the command runner; internal/testutil is a leaf too, imported by tests only;
// internal/durable, the fsync of a directory, is a leaf the store,
// plugin and host share; internal/runecut, the cut of text on a rune
// boundary, is a leaf every layer shares to bound the text it quotes; internal/shellquote,
// the quoting of a word for a shell, is a leaf every layer shares for the commands it advises; internal/canonjson, RFC 8785's
// canonical form of event data and escaping of a string, is a leaf the store, the host and the
// conformance kit share so what the record keeps is decided one way; internal/failpoint is a leaf the host and the plugin launcher mark their
// crash points with; it is compiled away without the failpoints tag;
// internal/idname, the suggestion of a valid id for a name that is not one,
// is a leaf the run file's decoder and the command line share;
// internal/bidi, the bidirectional controls shown as escapes, is a leaf
// the command line and the host's views share; internal/pathtree, whether
// a path lies in a directory's tree, is a leaf the run file's decoder and
// the host share. plugin/pluginhost, the host's launch on go-plugin, has a
// rule of its own so that only the host's packages may import it: a
// plugin (sdk, plugins/) links package plugin without go-plugin.
// The longest matching
// prefix decides; "" means nothing of ours. A package, or a prefix it may
// import, covers the subpackages below it unless they have a rule of their
// own: store and host must not import the store's backends
// (store/pgstore), test double (store/simfs) or conformance suite
// (store/storetest).
var allowed = map[string][]string{
	"store":                {"internal/regfile", "internal/canonjson", "internal/durable", "internal/runecut", "internal/shellquote"},
	"store/pgstore":        {"store", "internal/regfile", "internal/canonjson", "internal/durable", "internal/runecut", "internal/shellquote"},
	"store/simfs":          {"store", "internal/regfile", "internal/canonjson", "internal/durable", "internal/runecut", "internal/shellquote"},
	"store/storetest":      {"store", "internal/regfile", "internal/canonjson", "internal/durable", "internal/runecut", "internal/shellquote"},
	"plugin":               {"plugin/internal/", "internal/cgroup", "internal/proc", "internal/regfile", "internal/durable", "internal/failpoint", "internal/runecut", "internal/shellquote"},
	"plugin/pluginhost":    {"plugin", "plugin/internal/", "internal/cgroup", "internal/proc", "internal/regfile", "internal/durable", "internal/failpoint", "internal/runecut", "internal/shellquote"},
	"hcl":                  {"internal/regfile", "internal/idname", "internal/shellquote", "internal/pathtree"},
	"sdk":                  {"plugin", "sdk/", "internal/proc", "internal/cgroup", "internal/regfile", "internal/durable", "internal/failpoint", "internal/runecut", "internal/shellquote"},
	"sdk/conformance":      {"plugin", "plugin/pluginhost", "sdk/", "internal/proc", "internal/cgroup", "internal/regfile", "internal/durable", "internal/failpoint", "internal/runecut", "internal/canonjson", "internal/shellquote"},
	"internal/proc":        {},
	"internal/cgroup":      {},
	"internal/logfile":     {"store", "internal/regfile", "internal/canonjson", "internal/durable", "internal/runecut", "internal/shellquote"},
	"internal/hostenv":     {},
	"internal/testutil":    {},
	"internal/exampletest": {"plugin", "plugin/pluginhost", "internal/testutil", "internal/cgroup", "internal/proc", "internal/regfile", "internal/durable", "internal/failpoint", "internal/runecut", "internal/shellquote"},
	"internal/failpoint":   {},
	"internal/regfile":     {},
	"internal/durable":     {},
	"internal/runecut":     {},
	"internal/shellquote":  {},
	"internal/canonjson":   {},
	"internal/keeperwait":  {},
	"internal/idname":      {},
	"internal/bidi":        {},
	"host":                 {"store", "plugin", "plugin/pluginhost", "hcl", "host/", "internal/idname", "internal/proc", "internal/cgroup", "internal/failpoint", "internal/logfile", "internal/hostenv", "internal/regfile", "internal/durable", "internal/runecut", "internal/canonjson", "internal/shellquote", "internal/bidi", "internal/pathtree"},
	"plugins":              {"sdk", "plugin", "plugins/", "internal/proc", "internal/cgroup", "internal/regfile", "internal/durable", "internal/failpoint", "internal/runecut", "internal/shellquote"},
}

func rule(pkg string) (string, []string, bool) {
	best := ""
	for p := range allowed {
		if (pkg == p || strings.HasPrefix(pkg, p+"/")) && len(p) > len(best) {
			best = p
		}
	}
	r, ok := allowed[best]
	return best, r, ok
}

// ruleOf returns the prefix whose rule governs pkg.
func ruleOf(pkg string) string {
	best, _, _ := rule(pkg)
	return best
}

func permitted(dep string, prefixes []string, self string) bool {
	own := ruleOf(dep)
	if dep == self || strings.HasPrefix(dep, self+"/") && own == self {
		return true
	}
	for _, p := range prefixes {
		p = strings.TrimSuffix(p, "/")
		if dep == p || strings.HasPrefix(dep, p+"/") && own == ruleOf(p) {
			return true
		}
	}
	return false
}

// TestImportDirection lists every package's (non-test) dependencies with
// `go list -deps` and checks them against the layering rules.
func TestImportDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(f[0], module), "/")
		self, prefixes, ok := rule(pkg)
		if !ok {
			continue // cmd/obversa, examples: may import anything
		}
		checked++
		for _, d := range f[1:] {
			if !strings.HasPrefix(d, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(d, module+"/")
			if !permitted(dep, prefixes, self) {
				t.Errorf("%s imports %s, which docs/architecture.md#packages-and-imports does not allow", pkg, dep)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked only %d packages; the package list is wrong", checked)
	}
}

func TestRule(t *testing.T) {
	tests := []struct {
		pkg, dep string
		ok       bool
	}{
		{"store", "plugin", false},
		{"plugin", "plugin/internal/pluginv1", true},
		{"plugin", "host/graph", false},
		{"sdk/command", "plugin", true},
		{"sdk/conformance", "host/launch", false},
		{"sdk/conformance", "store", false},
		{"hcl", "plugin", false},
		{"host/executor", "store", true},
		{"store/pgstore", "store", true},
		{"store/pgstore", "host/graph", false},
		{"store/pgstore", "plugin", false},
		{"host/executor", "sdk", false},
		{"plugins/cmd-engine", "sdk/command", true},
		{"store", "store/simfs", false},
		{"store", "store/storetest", false},
		{"store/simfs", "store", true},
		{"store/storetest", "store", true},
		{"store/storetest", "store/simfs", false},
		{"host/watchdog", "host/executor", true},
		{"host/watchdog", "store/simfs", false},
		{"host/watchdog", "store/pgstore", false}, // backends are chosen by the CLI
		{"sdk/command", "internal/proc", true},
		{"sdk", "plugin/pluginhost", false},
		{"plugins/mock-engine", "plugin/pluginhost", false},
		{"plugin/pluginhost", "plugin", true},
		{"host/launch", "plugin/pluginhost", true},
		{"sdk/conformance", "plugin/pluginhost", true},
	}
	for _, tt := range tests {
		self, prefixes, ok := rule(tt.pkg)
		if !ok {
			t.Fatalf("no rule for %s", tt.pkg)
		}
		if got := permitted(tt.dep, prefixes, self); got != tt.ok {
			t.Errorf("%s → %s: permitted %v, want %v", tt.pkg, tt.dep, got, tt.ok)
		}
	}
}
