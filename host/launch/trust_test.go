package launch_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	hclv2 "github.com/hashicorp/hcl/v2"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/plugin"
)

func newKey(t *testing.T) plugin.SigningKey {
	t.Helper()
	k, err := plugin.GenerateSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// writeFile writes content to dir/name with mode perm and returns the path.
func writeFile(t *testing.T, dir, name, content string, perm os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	return p
}

// sign writes bin's signature by k, for this platform, and returns the
// signed statement.
func sign(t *testing.T, k plugin.SigningKey, bin, name, version string) plugin.Statement {
	t.Helper()
	sig, st, err := k.Sign(bin, plugin.Statement{Name: name, Version: version, Protocol: plugin.ProtocolVersion, OS: runtime.GOOS, Arch: runtime.GOARCH, File: filepath.Base(bin)})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin+plugin.SignatureSuffix, sig, 0o644); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestIsSidecar(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]bool{
		"bin/cmd-engine": false, "obversa-plugin-cmd": false, "obversa-plugin-cmd.exe": false, "x.minisig.d/cmd": false,
		"bin/cmd-engine.minisig": true, "x.SHA256": true, "x.sha256sum": true, "SHA256SUMS": true, "release.pub": true,
		"minisign.key": true, "x.asc": true, "x.sig": true,
	} {
		if got := launch.IsSidecar(p); got != want {
			t.Errorf("IsSidecar(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestLoadPublicKey(t *testing.T) {
	t.Parallel()
	k := newKey(t).PublicKey()
	dir := t.TempDir()
	file, _ := k.MarshalText()
	abs := writeFile(t, dir, "keys/release.pub", string(file), 0o644)
	writeFile(t, dir, "keys/broken.pub", "not a key\n", 0o644)
	for _, entry := range []string{k.String(), "keys/release.pub", abs} {
		got, err := launch.LoadPublicKey(entry, dir)
		if err != nil || !got.Equal(k) {
			t.Errorf("LoadPublicKey(%q) = %s, %v; want key %s", entry, got.ID(), err, k.ID())
		}
	}
	// /dev/zero would be read without end, a named pipe would block.
	fifo := filepath.Join(dir, "keys", "pipe.pub")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, entry := range []string{"keys/missing.pub", "keys/broken.pub", "RWQnot-a-key", "keys", "/dev/zero", fifo} {
		if _, err := launch.LoadPublicKey(entry, dir); !errors.Is(err, launch.ErrTrustedKey) || !strings.Contains(err.Error(), filepath.Base(entry)) {
			t.Errorf("LoadPublicKey(%q) = %v, want ErrTrustedKey naming it", entry, err)
		}
	}
}

func TestTrustedKeys(t *testing.T) {
	t.Parallel()
	org, vendor := newKey(t).PublicKey(), newKey(t).PublicKey()
	ids := func(keys []plugin.PublicKey) []string {
		var out []string
		for _, k := range keys {
			out = append(out, k.ID())
		}
		return out
	}
	tests := []struct {
		name      string
		run, plug []string
		want      []string
	}{
		{"none", nil, nil, nil},
		{"run file's", []string{org.String()}, nil, []string{org.ID()}},
		{"plugin's replace the run file's", []string{org.String()}, []string{vendor.String()}, []string{vendor.ID()}},
		{"an empty plugin list inherits", []string{org.String()}, []string{}, []string{org.ID()}},
		{"several", nil, []string{org.String(), vendor.String()}, []string{org.ID(), vendor.ID()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rf := &hcl.RunFile{Dir: t.TempDir(), TrustedKeys: tt.run}
			pl := &hcl.Plugin{Name: "p", TrustedKeys: tt.plug}
			keys, err := launch.TrustedKeys(rf, pl)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, ids(keys)); diff != "" {
				t.Errorf("TrustedKeys (-want +got):\n%s", diff)
			}
		})
	}
	rf := &hcl.RunFile{Dir: t.TempDir(), TrustedKeys: []string{"nope.pub"},
		TrustedKeyRanges: []hclv2.Range{{Filename: "run.hcl", Start: hclv2.Pos{Line: 3, Column: 17}}}}
	if _, err := launch.TrustedKeys(rf, &hcl.Plugin{Name: "p"}); !errors.Is(err, launch.ErrTrustedKey) || !strings.HasPrefix(err.Error(), `run.hcl:3:17: plugin "p": the run file's trusted_keys`) {
		t.Errorf("TrustedKeys(missing file) = %v, want ErrTrustedKey at the entry's place naming the plugin", err)
	}
}

func TestCheckSource(t *testing.T) {
	t.Parallel()
	k, stranger := newKey(t), newKey(t)
	dir := t.TempDir()
	bin := writeFile(t, dir, "plugin-bin", "plugin bytes", 0o755)
	digest, err := plugin.FileSHA256(bin)
	if err != nil {
		t.Fatal(err)
	}
	sign(t, k, bin, "p", "1")
	unsigned := writeFile(t, dir, "unsigned-bin", "plugin bytes", 0o755)
	other := strings.Repeat("ab", 32)
	// A release signed for another platform (lock and run refuse it, as
	// install does).
	elsewhere := writeFile(t, dir, "elsewhere-bin", "plugin bytes", 0o755)
	otherOS := "plan9"
	if runtime.GOOS == otherOS {
		otherOS = "linux"
	}
	sig, _, err := k.Sign(elsewhere, plugin.Statement{Name: "p", Version: "1", Protocol: plugin.ProtocolVersion, OS: otherOS, Arch: runtime.GOARCH})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "elsewhere-bin"+plugin.SignatureSuffix, string(sig), 0o644)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("cached", func(t *testing.T) {
		storage := t.TempDir()
		src, err := launch.CheckSource("p", bin, digest, nil, storage)
		if err != nil || src.Cached != launch.CachePath(storage, digest) {
			t.Fatalf("CheckSource = %+v, %v; want the copy at %s", src, err, launch.CachePath(storage, digest))
		}
		if err := launch.VerifyCached("p", src.Cached, digest); err != nil {
			t.Errorf("cached copy: %v", err)
		}
	})

	t.Run("pinned, no keys", func(t *testing.T) {
		src, err := launch.CheckSource("p", bin, digest, nil, "")
		if err != nil || src.SHA256 != digest || src.Verified != nil {
			t.Errorf("CheckSource = %+v, %v", src, err)
		}
	})
	t.Run("signed by a trusted key", func(t *testing.T) {
		src, err := launch.CheckSource("p", bin, digest, []plugin.PublicKey{stranger.PublicKey(), k.PublicKey()}, "")
		if err != nil || src.Verified == nil || src.Verified.KeyID != k.ID() || src.SHA256 != digest {
			t.Errorf("CheckSource = %+v, %v", src, err)
		}
	})
	tests := []struct {
		name     string
		path     string
		expected string
		keys     []plugin.PublicKey
		is       error
		mentions []string
	}{
		{"sidecar", bin + plugin.SignatureSuffix, "", nil, launch.ErrSidecar, []string{`plugin "p"`, ".minisig"}},
		{"missing", filepath.Join(dir, "nope"), "", nil, fs.ErrNotExist, []string{`plugin "p"`}},
		{"digest before signature", bin, other, []plugin.PublicKey{stranger.PublicKey()}, plugin.ErrDigestMismatch, []string{digest, other, bin}},
		{"unsigned", unsigned, digest, []plugin.PublicKey{k.PublicKey()}, plugin.ErrUntrusted, []string{`plugin "p"`, "PLUGIN_UNTRUSTED", "no signature"}},
		{"wrong key", bin, digest, []plugin.PublicKey{stranger.PublicKey()}, plugin.ErrUntrusted, []string{"PLUGIN_UNTRUSTED", k.ID()}},
		{"signed for another platform", elsewhere, "", []plugin.PublicKey{k.PublicKey()}, plugin.ErrUntrusted,
			[]string{`plugin "p"`, "PLUGIN_UNTRUSTED", otherOS + "/" + runtime.GOARCH, "this machine is " + runtime.GOOS + "/" + runtime.GOARCH}},
		{"named pipe", fifo, "", nil, plugin.ErrNotRegular, []string{`plugin "p"`, fifo, "a named pipe"}},
		{"character device", "/dev/zero", "", nil, plugin.ErrNotRegular, []string{`plugin "p"`, "/dev/zero", "a character device"}},
		{"directory", dir, "", nil, plugin.ErrNotRegular, []string{`plugin "p"`, dir, "a directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := launch.CheckSource("p", tt.path, tt.expected, tt.keys, "")
			if !errors.Is(err, tt.is) {
				t.Fatalf("CheckSource = %v, want %v", err, tt.is)
			}
			for _, m := range tt.mentions {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q lacks %q", err, m)
				}
			}
		})
	}
}
