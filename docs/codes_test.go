package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// codesSection is the heading of the codes table in decisions.md.
const codesSection = "## Codes and event names"

var (
	testNameRE  = regexp.MustCompile("`((?:Test|Fuzz)\\w+)`")
	testFuncRE  = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)\w+)\(`)
	codeConstRE = regexp.MustCompile(`(?m)^\s*Code\w*\s*=\s*"([A-Z][A-Z_]+)"`)
	eventRE     = regexp.MustCompile(`"((?:graph|run|preflight):[a-z-]+)"`)
)

// TestCodesTable checks the codes table of decisions.md: every row names
// tests that exist or says why it has none, and every outcome code and
// event name the host defines is in it.
func TestCodesTable(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("decisions.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), codesSection)
	if !ok {
		t.Fatalf("decisions.md has no %q section", codesSection)
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	tests := testFuncs(t)
	rows := 0
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if !strings.HasPrefix(line, "| ") || len(cells) != 5 || cells[0] == "documented" || strings.HasPrefix(cells[0], "---") {
			continue
		}
		rows++
		tested := cells[4]
		names := testNameRE.FindAllStringSubmatch(tested, -1)
		switch {
		case len(names) == 0 && !strings.HasPrefix(tested, "no test") || strings.HasPrefix(tested, "no test") && !strings.Contains(tested, ":"):
			t.Errorf("row %q names no test and gives no reason (write `no test: why`)", cells[1])
		}
		for _, n := range names {
			if !tests[n[1]] {
				t.Errorf("row %q names %s, which no test file defines", cells[1], n[1])
			}
		}
	}
	if rows < 40 {
		t.Fatalf("read %d rows from the codes table; is its layout still | documented | Obversa | meaning | why | tested by |?", rows)
	}
	for _, name := range hostNames(t) {
		if !strings.Contains(section, "`"+name+"`") {
			t.Errorf("%s is defined in host/ but missing from the codes table", name)
		}
	}
}

// testFuncs returns the names of every test and fuzz function of the
// module.
func testFuncs(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	walkGo(t, "..", func(path string, src []byte) {
		if strings.HasSuffix(path, "_test.go") {
			for _, m := range testFuncRE.FindAllSubmatch(src, -1) {
				out[string(m[1])] = true
			}
		}
	})
	return out
}

// hostNames returns the outcome codes (Code… constants) and event names
// the host's packages define.
func hostNames(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	var out []string
	walkGo(t, filepath.Join("..", "host"), func(path string, src []byte) {
		if strings.HasSuffix(path, "_test.go") {
			return
		}
		for _, re := range []*regexp.Regexp{codeConstRE, eventRE} {
			for _, m := range re.FindAllSubmatch(src, -1) {
				if n := string(m[1]); !seen[n] {
					seen[n] = true
					out = append(out, n)
				}
			}
		}
	})
	return out
}

func walkGo(t *testing.T, root string, fn func(path string, src []byte)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fn(path, src)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
