package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"aead.dev/minisign"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/plugin"
)

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
	// Without --dir, OBVERSA_PLUGINS_DIR or a home directory, install is
	// refused rather than placed under the working directory's .obversa,
	// where a storage directory keeps its plugin cache.
	nohome := obversaEnv(t, work, []string{"HOME=", pluginsDirEnv + "="}, "plugin", "install", "--key", pub, archive)
	if nohome.code != exitUsage || !strings.Contains(nohome.stderr, "no plugins directory") || !strings.Contains(nohome.stderr, "--dir") {
		t.Errorf("install without a home: exit %d: %s %s", nohome.code, nohome.stdout, nohome.stderr)
	}
	if _, err := os.Stat(filepath.Join(work, ".obversa", "plugins", "cmd")); err == nil {
		t.Error("install without a home placed the plugin under the working directory's .obversa")
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
