package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/plugin"
)

// trustRunFile runs one node on a node plugin. PLUGIN is the binary,
// PIN an optional sha256 attribute, KEYS an optional plugin-level
// trusted_keys attribute, TRUST optional top-level attributes, COMMAND
// the node's shell command.
const trustRunFile = `
restart {
  max_restarts    = 2
  initial_backoff = "2s"
  max_backoff     = "2s"
}
teardown_grace = "1s"
TRUST
plugin "shell" {
  type = "node"
  path = "PLUGIN"
  PIN
  KEYS
}
graph "dag" {
  node "work" {
    binding    = "shell"
    input      = { command = ["sh", "-c", "COMMAND"] }
    retry_safe = true
  }
}
`

// trustSetup is a run directory with its own copy of cmd-engine, so that
// a test can swap, sign or delete the binary.
type trustSetup struct {
	dir, runFile, bin string
}

// newTrustSetup copies cmd-engine to <dir>/bin/cmd-engine and writes the
// run file with the given replacements of trustRunFile's placeholders.
func newTrustSetup(t *testing.T, replace map[string]string) *trustSetup {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin", "cmd-engine")
	copyBinary(t, filepath.Join(binDir, "cmd-engine"), bin)
	r := map[string]string{"PLUGIN": "bin/cmd-engine", "PIN": "", "KEYS": "", "TRUST": "", "COMMAND": "echo trusted"}
	for k, v := range replace {
		r[k] = v
	}
	text := trustRunFile
	for _, k := range []string{"PLUGIN", "PIN", "KEYS", "TRUST", "COMMAND"} {
		text = strings.ReplaceAll(text, k, r[k])
	}
	runFile := filepath.Join(dir, "run.hcl")
	if err := os.WriteFile(runFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return &trustSetup{dir: dir, runFile: runFile, bin: bin}
}

// copyBinary copies an executable, replacing dst atomically.
func copyBinary(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := dst + ".new"
	if err := os.WriteFile(tmp, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}

func fileDigest(t *testing.T, path string) string {
	t.Helper()
	sum, err := plugin.FileSHA256(path)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func wantStderr(t *testing.T, r result, code int, mentions ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	for _, m := range mentions {
		if !strings.Contains(r.stderr, m) {
			t.Errorf("stderr lacks %q:\n%s", m, r.stderr)
		}
	}
}

func noRunDir(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Join(dir, ".obversa", "default", "runs"))
	if len(entries) != 0 {
		t.Errorf("a refused run left %d run directories", len(entries))
	}
}

// TestTrustSwapAfterLock replaces a pinned binary: the run is refused
// before it exists, naming the plugin, the path, both digests and the
// command that re-pins; re-pinning accepts the new binary.
func TestTrustSwapAfterLock(t *testing.T) {
	t.Parallel()
	t.Run("pinned in the lock file", func(t *testing.T) {
		t.Parallel()
		s := newTrustSetup(t, nil)
		if r := obversa(t, s.dir, "plugin", "lock", s.runFile); r.code != 0 {
			t.Fatalf("lock: %s", r.stderr)
		}
		pinned := fileDigest(t, s.bin)
		copyBinary(t, filepath.Join(binDir, "mock-engine"), s.bin)
		swapped := fileDigest(t, s.bin)
		r := obversa(t, s.dir, "run", s.runFile)
		wantStderr(t, r, exitUsage, `plugin "shell"`, s.bin, pinned, swapped, "obversa plugin lock --upgrade "+s.runFile)
		noRunDir(t, s.dir)
		// lock without --upgrade refuses too, naming both digests.
		wantStderr(t, obversa(t, s.dir, "plugin", "lock", s.runFile), exitUsage, pinned, swapped, "--upgrade")
		if r := obversa(t, s.dir, "plugin", "lock", "--upgrade", s.runFile); r.code != 0 || !strings.Contains(r.stdout, swapped) {
			t.Fatalf("lock --upgrade: exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		lf, diags := hcl.DecodeLockFile(filepath.Join(s.dir, hcl.LockFileName))
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		if p, _ := lf.Lookup("shell"); p.SHA256 != swapped || p.Path != filepath.Join("bin", "cmd-engine") {
			t.Errorf("lock entry after --upgrade = %+v", p)
		}
	})
	t.Run("pinned in the run file", func(t *testing.T) {
		t.Parallel()
		pinned := fileDigest(t, filepath.Join(binDir, "cmd-engine"))
		s := newTrustSetup(t, map[string]string{"PIN": `sha256 = "` + pinned + `"`})
		copyBinary(t, filepath.Join(binDir, "mock-engine"), s.bin)
		swapped := fileDigest(t, s.bin)
		r := obversa(t, s.dir, "run", s.runFile)
		wantStderr(t, r, exitUsage, `plugin "shell"`, s.bin, pinned, swapped, `sha256 = "`+swapped+`"`)
		noRunDir(t, s.dir)
	})
}

// TestTrustSidecarNeverExecuted refuses a plugin path naming a signature
// or checksum file before anything runs.
func TestTrustSidecarNeverExecuted(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"cmd-engine.minisig", "cmd-engine.sha256", "SHA256SUMS"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newTrustSetup(t, map[string]string{"PLUGIN": "bin/" + name})
			copyBinary(t, filepath.Join(binDir, "cmd-engine"), filepath.Join(s.dir, "bin", name))
			wantStderr(t, obversa(t, s.dir, "run", "--lock", s.runFile), exitUsage, name, "not a plugin binary")
			wantStderr(t, obversa(t, s.dir, "plugin", "lock", s.runFile), exitUsage, "not a plugin binary")
			if _, err := os.Stat(filepath.Join(s.dir, hcl.LockFileName)); !os.IsNotExist(err) {
				t.Errorf("a lock file was written (stat: %v)", err)
			}
		})
	}
}

// TestTrustTamperedCache changes a cached binary's bytes: a later run of
// the same binary is refused with PLUGIN_CHANGED, and a run whose worker
// restarts into the tampered entry never executes it.
func TestTrustTamperedCache(t *testing.T) {
	t.Parallel()
	s := newTrustSetup(t, nil)
	if r := obversa(t, s.dir, "run", "--lock", "--run-id", "first", s.runFile); r.code != 0 {
		t.Fatalf("first run: exit %d: %s", r.code, r.stderr)
	}
	digest := fileDigest(t, s.bin)
	cached := filepath.Join(s.dir, ".obversa", "plugins", "sha256", digest)
	if st, err := os.Stat(cached); err != nil || st.Mode().Perm()&0o222 != 0 {
		t.Fatalf("cache entry %s: %v, %v; want a read-only file", cached, st, err)
	}
	marker := filepath.Join(s.dir, "tampered-ran")
	tamperWith(t, cached, "#!/bin/sh\ntouch "+marker+"\n")

	r := obversa(t, s.dir, "run", "--run-id", "second", s.runFile)
	wantStderr(t, r, exitUsage, "PLUGIN_CHANGED", `plugin "shell"`, cached, digest)
	if _, err := os.Stat(runDirOf(s.runFile, "second")); !os.IsNotExist(err) {
		t.Errorf("the refused run was created (stat: %v)", err)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("the tampered cache entry was executed (stat: %v)", err)
	}
}

// TestTrustTamperedCacheMidRun tampers with the cache while a worker
// crashes — replacing the entry by rename or rewriting it in place: the
// restarted worker refuses the entry, the run ends PLUGIN_CHANGED without
// another restart, and the tampered bytes never run. The cache entry is
// older than plugin.StampSettle, so the host's check vouches for it with
// its stamp and the first worker launches it without hashing it again
// (docs/decisions.md, "A verified cache entry is not hashed twice"); the
// restarted worker sees that the stamp no longer holds.
func TestTrustTamperedCacheMidRun(t *testing.T) {
	t.Parallel()
	for name, tamper := range map[string]func(t *testing.T, path, content string){
		"renamed over": tamperWith,
		"in place":     tamperInPlace,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newTrustSetup(t, map[string]string{"COMMAND": "echo x >> EFFECTS; sleep 3; echo done"})
			effectsFile := filepath.Join(s.dir, "effects.log")
			rewrite(t, s.runFile, "EFFECTS", effectsFile)
			if r := obversa(t, s.dir, "plugin", "lock", s.runFile); r.code != 0 {
				t.Fatal(r.stderr)
			}
			cached := filepath.Join(s.dir, ".obversa", "plugins", "sha256", fileDigest(t, s.bin))
			// The cache as an earlier run left it, settled.
			copyBinary(t, s.bin, cached)
			if err := os.Chmod(cached, 0o555); err != nil {
				t.Fatal(err)
			}
			time.Sleep(plugin.StampSettle + 100*time.Millisecond)
			marker := filepath.Join(s.dir, "tampered-ran")
			r := crashOnce(t, s, "mid", effectsFile, func() { tamper(t, cached, "#!/bin/sh\ntouch "+marker+"\n") })
			runDir := runDirOf(s.runFile, "mid")
			res := recorded(t, runDir, "graph:run-finished")
			if r.code != exitFailed || len(res) != 1 || res[0]["code"] != "PLUGIN_CHANGED" {
				t.Fatalf("exit %d, result %v, want PLUGIN_CHANGED: %s", r.code, res, r.stderr)
			}
			if _, err := os.Stat(marker); !os.IsNotExist(err) {
				t.Errorf("the tampered cache entry was executed (stat: %v)", err)
			}
			if b, _ := os.ReadFile(filepath.Join(runDir, "plugins.log")); strings.Count(string(b), "not hashed again") != 1 {
				t.Errorf("plugins.log shows %d launches on the host's stamp, want 1 (the first worker's)", strings.Count(string(b), "not hashed again"))
			}
		})
	}
}

func countEvents(t *testing.T, runDir, typ string) int {
	t.Helper()
	n := 0
	forEvents(t, runDir, func(got string, _ json.RawMessage) {
		if got == typ {
			n++
		}
	})
	return n
}

func forEvents(t *testing.T, runDir string, fn func(typ string, data json.RawMessage)) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		var e struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if json.Unmarshal([]byte(line), &e) == nil {
			fn(e.Type, e.Data)
		}
	}
}

// startedPaths returns the path of every "starting plugin" line of the
// run's plugins.log.
func startedPaths(t *testing.T, runDir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, "plugins.log"))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, line := range strings.Split(string(b), "\n") {
		var e struct {
			Message string `json:"@message"`
			Path    string `json:"path"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Message == "starting plugin" {
			paths = append(paths, e.Path)
		}
	}
	return paths
}

// tamperWith replaces a read-only cache entry (by rename, which works even
// while the old binary runs), as an attacker running as the same user
// could.
func tamperWith(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".evil"
	if err := os.WriteFile(tmp, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// tamperInPlace overwrites the start of a read-only file with content,
// keeping its inode, as an attacker with the same user id could.
func tamperInPlace(t *testing.T, path, content string) {
	t.Helper()
	if err := os.Chmod(path, 0o755); err != nil {
		t.Fatal(err)
	}
	// The killed worker's plugin may still be executing it for a moment
	// (ETXTBSY).
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	for deadline := time.Now().Add(10 * time.Second); errors.Is(err, syscall.ETXTBSY) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		f, err = os.OpenFile(path, os.O_WRONLY, 0)
	}
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteAt([]byte(content), 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestTrustedKeyRefusalNamesPosition: a trusted_keys entry that is
// neither a key nor a .pub file — the run file's or a plugin's — is
// refused by plugin lock and by run at the entry's line and column, as
// validate reports it, naming the list and what an entry may be.
func TestTrustedKeyRefusalNamesPosition(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, at, whose string
		replace         map[string]string
	}{
		// trustRunFile's TRUST is on line 8, a plugin's KEYS on line 13.
		{"run file's", "run.hcl:8:17: ", "the run file's trusted_keys", map[string]string{"TRUST": `trusted_keys = ["keys/none.pub"]`}},
		{"plugin's", "run.hcl:13:19: ", "its own trusted_keys", map[string]string{"KEYS": `trusted_keys = ["keys/none.pub"]`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newTrustSetup(t, tt.replace)
			v := obversa(t, s.dir, "validate", s.runFile)
			if !strings.Contains(v.stderr+v.stdout, tt.at) {
				t.Fatalf("validate does not report %q:\n%s%s", tt.at, v.stdout, v.stderr)
			}
			for _, args := range [][]string{{"plugin", "lock", s.runFile}, {"run", s.runFile}} {
				r := obversa(t, s.dir, args...)
				wantStderr(t, r, exitUsage, tt.at+`plugin "shell": `+tt.whose, `"keys/none.pub"`, "an entry of trusted_keys is a minisign public key")
			}
			noRunDir(t, s.dir)
		})
	}
}
