package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"aead.dev/minisign"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/host/runstate"
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

// TestTrustRestartRunsPinnedBytes rebuilds or deletes the source binary
// while the watchdog backs off after a worker crash: the restarted worker
// still launches the pinned copy from the cache and the run completes.
func TestTrustRestartRunsPinnedBytes(t *testing.T) {
	t.Parallel()
	for name, change := range map[string]func(t *testing.T, s *trustSetup){
		"rebuilt": func(t *testing.T, s *trustSetup) { copyBinary(t, filepath.Join(binDir, "mock-engine"), s.bin) },
		"deleted": func(t *testing.T, s *trustSetup) {
			if err := os.Remove(s.bin); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newTrustSetup(t, map[string]string{"COMMAND": "echo x >> EFFECTS; sleep 2; echo done"})
			effectsFile := filepath.Join(s.dir, "effects.log")
			rewrite(t, s.runFile, "EFFECTS", effectsFile)
			if r := obversa(t, s.dir, "plugin", "lock", s.runFile); r.code != 0 {
				t.Fatal(r.stderr)
			}
			pinned := fileDigest(t, s.bin)
			r := crashOnce(t, s, "rb", effectsFile, func() { change(t, s) })
			if r.code != 0 {
				t.Fatalf("exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			runDir := runDirOf(s.runFile, "rb")
			if n := countEvents(t, runDir, runstate.EventWorkerStarted); n != 2 {
				t.Errorf("%d workers started, want 2 (one restart)", n)
			}
			if b, _ := os.ReadFile(effectsFile); strings.Count(string(b), "\n") != 2 {
				t.Errorf("the node ran %d times, want 2", strings.Count(string(b), "\n"))
			}
			paths := startedPaths(t, runDir)
			want := filepath.Join(s.dir, ".obversa", "plugins", "sha256", pinned)
			if len(paths) != 2 {
				t.Fatalf("plugins.log shows %d plugin starts, want 2: %v", len(paths), paths)
			}
			for _, p := range paths {
				if p != want {
					t.Errorf("a worker started %s, want the pinned cache entry %s", p, want)
				}
			}
		})
	}
}

// TestTrustResumeRunsPinnedBytes pauses a run (a crash during a node that
// is not retry-safe), deletes the source binary, and resumes: the resumed
// worker launches the pinned copy from the cache.
func TestTrustResumeRunsPinnedBytes(t *testing.T) {
	t.Parallel()
	s := newTrustSetup(t, map[string]string{"COMMAND": "echo x >> EFFECTS; sleep 2; echo done"})
	effectsFile := filepath.Join(s.dir, "effects.log")
	rewrite(t, s.runFile, "EFFECTS", effectsFile)
	rewrite(t, s.runFile, "retry_safe = true", "retry_safe = false")
	if r := obversa(t, s.dir, "plugin", "lock", s.runFile); r.code != 0 {
		t.Fatal(r.stderr)
	}
	pinned := fileDigest(t, s.bin)
	if r := crashOnce(t, s, "rs", effectsFile, func() {}); r.code != exitPaused {
		t.Fatalf("exit %d, want %d (paused); stderr:\n%s", r.code, exitPaused, r.stderr)
	}
	if err := os.Remove(s.bin); err != nil {
		t.Fatal(err)
	}
	runDir := runDirOf(s.runFile, "rs")
	if r := obversa(t, s.dir, "resume", "--position", "dag/work/1", "--reconciled=not-done", runDir); r.code != 0 {
		t.Fatalf("resume: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	want := filepath.Join(s.dir, ".obversa", "plugins", "sha256", pinned)
	paths := startedPaths(t, runDir)
	if len(paths) < 2 {
		t.Fatalf("plugins.log shows %d plugin starts, want one per worker: %v", len(paths), paths)
	}
	for _, p := range paths {
		if p != want {
			t.Errorf("a worker started %s, want the pinned cache entry %s", p, want)
		}
	}
}

// crashOnce starts `obversa run --run-id id`, SIGKILLs the worker once the
// node has left its first effect, calls during() while the watchdog backs
// off, and waits for the run to end.
func crashOnce(t *testing.T, s *trustSetup, id, effectsFile string, during func()) result {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "obversa"), "run", "--run-id", id, s.runFile)
	cmd.Dir = s.dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, _ := os.ReadFile(effectsFile); len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the node never ran: %s", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	pid := workerPID(t, runDirOf(s.runFile, id))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill worker %d: %v", pid, err)
	}
	during()
	err := cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
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

// keygen creates a key pair in dir with `obversa plugin keygen` and
// returns the public key's base64 line.
func keygen(t *testing.T, dir, prefix string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := obversa(t, dir, "plugin", "keygen", "--secret", prefix+".key", "--public", prefix+".pub")
	if r.code != 0 {
		t.Fatalf("keygen: %s", r.stderr)
	}
	m := regexp.MustCompile(`trusted_keys = \["(RW[A-Za-z0-9+/=]+)"\]`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("keygen printed no trusted_keys line:\n%s", r.stdout)
	}
	return m[1]
}

// signBin signs a binary with `obversa plugin sign`, naming it so that the
// plugin is not launched.
func signBin(t *testing.T, dir, key, bin string) {
	t.Helper()
	if r := obversa(t, dir, "plugin", "sign", "--key", key, "--name", "cmd", "--version", "0.1.0", bin); r.code != 0 {
		t.Fatalf("sign: %s", r.stderr)
	}
}

// TestTrustSignatures runs a plugin under trusted_keys: a valid signature
// runs and is recorded; a missing signature, another key, a statement for
// other bytes, or a key the plugin's own list does not trust is refused
// with PLUGIN_UNTRUSTED, by both `plugin lock` and `run`, before anything
// runs.
func TestTrustSignatures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		trust   string // TRUST placeholder; RELEASE and OTHER are the two keys
		keys    string // KEYS placeholder
		prepare func(t *testing.T, s *trustSetup)
		detail  string // "" for a run that passes
	}{
		{name: "valid signature, key file", trust: `trusted_keys = ["keys/release.pub"]`,
			prepare: func(t *testing.T, s *trustSetup) { signBin(t, s.dir, "keys/release.key", s.bin) }},
		{name: "valid signature, inline key, one of two", trust: `trusted_keys = ["OTHER", "RELEASE"]`,
			prepare: func(t *testing.T, s *trustSetup) { signBin(t, s.dir, "keys/release.key", s.bin) }},
		{name: "plugin list replaces the run file's", trust: `trusted_keys = ["keys/other.pub"]`, keys: `trusted_keys = ["RELEASE"]`,
			prepare: func(t *testing.T, s *trustSetup) { signBin(t, s.dir, "keys/release.key", s.bin) }},
		{name: "unsigned", trust: `trusted_keys = ["RELEASE"]`,
			prepare: func(*testing.T, *trustSetup) {}, detail: "no signature"},
		{name: "wrong key", trust: `trusted_keys = ["RELEASE"]`,
			prepare: func(t *testing.T, s *trustSetup) { signBin(t, s.dir, "keys/other.key", s.bin) }, detail: "not trusted"},
		{name: "plugin list excludes the signer", trust: `trusted_keys = ["RELEASE"]`, keys: `trusted_keys = ["keys/other.pub"]`,
			prepare: func(t *testing.T, s *trustSetup) { signBin(t, s.dir, "keys/release.key", s.bin) }, detail: "not trusted"},
		{name: "statement names another digest", trust: `trusted_keys = ["RELEASE"]`,
			prepare: func(t *testing.T, s *trustSetup) { signOtherDigest(t, filepath.Join(s.dir, "keys/release.key"), s.bin) },
			detail:  "vouches for sha256 " + strings.Repeat("ab", 32)},
		{name: "signed for another platform", trust: `trusted_keys = ["RELEASE"]`,
			prepare: func(t *testing.T, s *trustSetup) {
				if r := obversa(t, s.dir, "plugin", "sign", "--key", "keys/release.key", "--name", "cmd", "--version", "0.1.0",
					"--os", "plan9", "--arch", runtime.GOARCH, s.bin); r.code != 0 {
					t.Fatalf("sign: %s", r.stderr)
				}
			}, detail: "is for cmd 0.1.0 on plan9/" + runtime.GOARCH + ", but this machine is " + runtime.GOOS + "/" + runtime.GOARCH},
		{name: "binary swapped after signing", trust: `trusted_keys = ["RELEASE"]`,
			prepare: func(t *testing.T, s *trustSetup) {
				signBin(t, s.dir, "keys/release.key", s.bin)
				copyBinary(t, filepath.Join(binDir, "mock-engine"), s.bin)
			}, detail: "does not verify"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newTrustSetup(t, map[string]string{"TRUST": tt.trust, "KEYS": tt.keys})
			keysDir := filepath.Join(s.dir, "keys")
			release, other := keygen(t, keysDir, "release"), keygen(t, keysDir, "other")
			rewrite(t, s.runFile, "RELEASE", release)
			rewrite(t, s.runFile, "OTHER", other)
			tt.prepare(t, s)

			lock := obversa(t, s.dir, "plugin", "lock", s.runFile)
			if tt.detail != "" {
				wantStderr(t, lock, exitUsage, "PLUGIN_UNTRUSTED", `plugin "shell"`, tt.detail)
				// Pinned by digest, the run itself still demands the signature.
				rewrite(t, s.runFile, "path = \"bin/cmd-engine\"\n", "path = \"bin/cmd-engine\"\n  sha256 = \""+fileDigest(t, s.bin)+"\"\n")
				wantStderr(t, obversa(t, s.dir, "run", s.runFile), exitUsage, "PLUGIN_UNTRUSTED", `plugin "shell"`, tt.detail)
				noRunDir(t, s.dir)
				return
			}
			if lock.code != 0 {
				t.Fatalf("lock: exit %d: %s", lock.code, lock.stderr)
			}
			lf, _ := hcl.DecodeLockFile(filepath.Join(s.dir, hcl.LockFileName))
			entry, _ := lf.Lookup("shell")
			sig, _ := os.ReadFile(s.bin + plugin.SignatureSuffix)
			sigSum := sha256.Sum256(sig)
			if entry.KeyID == "" || entry.Signature != "sha256:"+hex.EncodeToString(sigSum[:]) {
				t.Errorf("lock entry %+v does not record the signature", entry)
			}
			if res := obversa(t, s.dir, "run", "--run-id", "ok", s.runFile); res.code != 0 {
				t.Fatalf("run: exit %d: %s", res.code, res.stderr)
			}
			// The plan records which key vouched for the plugin.
			var plan struct {
				Plan struct {
					Plugins []struct {
						KeyID     string `json:"key_id"`
						Signature string `json:"signature"`
					} `json:"plugins"`
				} `json:"plan"`
			}
			forEvents(t, runDirOf(s.runFile, "ok"), func(typ string, data json.RawMessage) {
				if typ == "graph:run-started" {
					_ = json.Unmarshal(data, &plan)
				}
			})
			if len(plan.Plan.Plugins) != 1 || plan.Plan.Plugins[0].KeyID != entry.KeyID || plan.Plan.Plugins[0].Signature != entry.Signature {
				t.Errorf("run-started plan plugins = %+v, want key %s", plan.Plan.Plugins, entry.KeyID)
			}
		})
	}
}

// TestTrustOnFirstUseRecordsSignature pins an unpinned, signed plugin
// with `run --lock`: the lock file gets its digest and signature.
func TestTrustOnFirstUseRecordsSignature(t *testing.T) {
	t.Parallel()
	s := newTrustSetup(t, map[string]string{"TRUST": `trusted_keys = ["keys/release.pub"]`})
	keygen(t, filepath.Join(s.dir, "keys"), "release")
	wantStderr(t, obversa(t, s.dir, "run", s.runFile), exitUsage, "not pinned", "obversa plugin lock")
	signBin(t, s.dir, "keys/release.key", s.bin)
	if r := obversa(t, s.dir, "run", "--lock", s.runFile); r.code != 0 {
		t.Fatalf("run --lock: exit %d: %s", r.code, r.stderr)
	}
	lf, diags := hcl.DecodeLockFile(filepath.Join(s.dir, hcl.LockFileName))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	entry, ok := lf.Lookup("shell")
	if !ok || entry.SHA256 != fileDigest(t, s.bin) || entry.KeyID == "" || !strings.HasPrefix(entry.Signature, "sha256:") {
		t.Errorf("lock entry = %+v, %v; want digest and signature", entry, ok)
	}
}

// signOtherDigest signs bin with the key file's secret key but a statement
// naming another digest — what a signer would produce for another build.
func signOtherDigest(t *testing.T, keyFile, bin string) {
	t.Helper()
	text, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var priv minisign.PrivateKey
	if err := priv.UnmarshalText(text); err != nil {
		t.Fatal(err)
	}
	msg, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	st := plugin.Statement{Name: "cmd", Version: "0.1.0", Protocol: 1, OS: "linux", Arch: "amd64", SHA256: strings.Repeat("ab", 32)}
	r := minisign.NewReader(bytes.NewReader(msg))
	if _, err := io.Copy(io.Discard, r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin+plugin.SignatureSuffix, r.SignWithComments(priv, st.TrustedComment(), "other build"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTrustRoundTrip is the release path of docs/plugins.md: keygen, sign
// (name and version from the plugin's Describe), verify, publish an
// archive, install it, paste the printed block, lock and run.
func TestTrustRoundTrip(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	pub := keygen(t, work, "minisign")
	before, _ := os.ReadFile(filepath.Join(work, "minisign.key"))
	wantStderr(t, obversa(t, work, "plugin", "keygen"), exitUsage, "minisign.key exists", "--force")
	if after, _ := os.ReadFile(filepath.Join(work, "minisign.key")); !bytes.Equal(before, after) {
		t.Fatal("keygen without --force replaced the secret key")
	}
	dist := filepath.Join(work, "dist")
	bin := filepath.Join(dist, "obversa-plugin-cmd")
	copyBinary(t, filepath.Join(binDir, "cmd-engine"), bin)

	if r := obversa(t, work, "plugin", "sign", "dist/obversa-plugin-cmd"); r.code != 0 || !strings.Contains(r.stdout, "cmd 0.1.0") {
		t.Fatalf("sign: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if r := obversa(t, work, "plugin", "verify", "dist/obversa-plugin-cmd"); r.code != 0 || !strings.HasPrefix(r.stdout, "ok: ") {
		t.Fatalf("verify: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if r := obversa(t, work, "plugin", "describe", "--json", "dist/obversa-plugin-cmd"); r.code != 0 || !strings.Contains(r.stdout, `"name":"cmd"`) || !strings.Contains(r.stdout, `"protocol":1`) {
		t.Fatalf("describe: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	archive := filepath.Join(work, "cmd_0.1.0_linux_amd64.tar.gz")
	writeRelease(t, archive, "cmd_0.1.0", bin, bin+plugin.SignatureSuffix)

	plugins := filepath.Join(work, "plugins")
	r := obversa(t, work, "plugin", "install", "--key", pub, "--dir", plugins, archive)
	if r.code != 0 {
		t.Fatalf("install: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	installed := filepath.Join(plugins, "cmd", "0.1.0", "obversa-plugin-cmd")
	i := strings.Index(r.stdout, `plugin "cmd" {`)
	if i < 0 || !strings.Contains(r.stdout, installed) || !strings.Contains(r.stdout, pub) {
		t.Fatalf("install printed no usable plugin block:\n%s", r.stdout)
	}
	block := strings.Replace(r.stdout[i:], `type         = "engine" # serves: engine, node`, `type         = "node"`, 1)

	runFile := filepath.Join(work, "run.hcl")
	text := block + `
graph "dag" {
  node "hello" {
    binding = "cmd"
    input   = { command = ["echo", "installed"] }
  }
}
`
	if err := os.WriteFile(runFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := obversa(t, work, "plugin", "lock", runFile); r.code != 0 || !strings.Contains(r.stdout, "signed by") {
		t.Fatalf("lock: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	res := obversa(t, work, "run", "--json", "--run-id", "rt", runFile)
	if res.code != 0 || !strings.Contains(res.stdout, "installed") {
		t.Fatalf("run: exit %d: %s %s", res.code, res.stdout, res.stderr)
	}
	// Installing the same release again is a no-op.
	if again := obversa(t, work, "plugin", "install", "--key", pub, "--dir", plugins, archive); again.code != 0 || !strings.Contains(again.stdout, "already installed") {
		t.Errorf("second install: exit %d: %s %s", again.code, again.stdout, again.stderr)
	}
}

// writeRelease writes a .tar.gz holding files inside one top-level
// directory, plus a README, as a release would.
func writeRelease(t *testing.T, archive, top string, files ...string) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	add := func(name string, data []byte, mode int64) {
		if err := tw.WriteHeader(&tar.Header{Name: top + "/" + name, Mode: mode, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		add(filepath.Base(f), b, 0o755)
	}
	add("README.md", []byte("# cmd plugin\n"), 0o644)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(archive, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTrustReferenceVectors checks `obversa plugin verify` against the
// reference minisign tool's own signature: the cryptography passes and
// only the missing plugin statement is reported; a changed message fails
// the signature itself.
func TestTrustReferenceVectors(t *testing.T) {
	t.Parallel()
	ref := filepath.Join(repoRoot, "plugin", "testdata", "minisign")
	dir := t.TempDir()
	for _, f := range []string{"message.txt", "message.txt.minisig", "minisign.pub"} {
		b, err := os.ReadFile(filepath.Join(ref, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := obversa(t, dir, "plugin", "verify", "message.txt")
	wantStderr(t, r, exitFailed, "PLUGIN_UNTRUSTED", "not an Obversa plugin statement")
	if strings.Contains(r.stderr, "does not verify") {
		t.Errorf("the reference signature failed cryptographically: %s", r.stderr)
	}
	if err := os.WriteFile(filepath.Join(dir, "message.txt"), []byte("Hello World?\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantStderr(t, obversa(t, dir, "plugin", "verify", "--key", "minisign.pub", "message.txt"), exitFailed, "PLUGIN_UNTRUSTED", "does not verify")
}
