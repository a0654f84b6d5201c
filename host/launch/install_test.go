package launch_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/plugin"
)

// member is one file of a test archive or directory.
type member struct {
	name    string
	content string
	link    bool // a symbolic link to content
}

// release signs content as plugin name/version with k and returns the
// members of a release: the binary under its distribution name, its
// signature, and a README.
func release(t *testing.T, k plugin.SigningKey, name, version, content string) []member {
	t.Helper()
	bin := writeFile(t, t.TempDir(), launch.BinaryPrefix+name, content, 0o755)
	sign(t, k, bin, name, version)
	sig, err := os.ReadFile(bin + plugin.SignatureSuffix)
	if err != nil {
		t.Fatal(err)
	}
	return []member{
		{name: launch.BinaryPrefix + name, content: content},
		{name: launch.BinaryPrefix + name + plugin.SignatureSuffix, content: string(sig)},
		{name: "README.md", content: "docs"},
	}
}

func under(dir string, ms []member) []member {
	out := make([]member, len(ms))
	for i, m := range ms {
		m.name = dir + "/" + m.name
		out[i] = m
	}
	return out
}

func writeTarGz(t *testing.T, ms []member) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, m := range ms {
		h := &tar.Header{Name: m.name, Mode: 0o755, Size: int64(len(m.content)), Typeflag: tar.TypeReg}
		if m.link {
			h = &tar.Header{Name: m.name, Linkname: m.content, Typeflag: tar.TypeSymlink, Mode: 0o777}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if !m.link {
			if _, err := tw.Write([]byte(m.content)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return writeFile(t, t.TempDir(), "release.tar.gz", buf.String(), 0o644)
}

func writeZip(t *testing.T, ms []member) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, m := range ms {
		w, err := zw.Create(m.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(m.content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return writeFile(t, t.TempDir(), "release.zip", buf.String(), 0o644)
}

func writeDir(t *testing.T, ms []member) string {
	t.Helper()
	dir := t.TempDir()
	for _, m := range ms {
		if m.link {
			if err := os.Symlink(m.content, filepath.Join(dir, m.name)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		writeFile(t, dir, m.name, m.content, 0o755)
	}
	return dir
}

func TestPluginNameFromFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		base, name string
		ok         bool
	}{
		{"obversa-plugin-cmd", "cmd", true},
		{"obversa-plugin-cmd_2-x.exe", "cmd_2-x", true},
		{"obversa-plugin-cmd.minisig", "", false},
		{"obversa-plugin-cmd.sha256", "", false},
		{"obversa-plugin-", "", false},
		{"cmd-engine", "", false},
		{"obversa-plugin-a.b", "", false},
		{"SHA256SUMS", "", false},
	}
	for _, tt := range tests {
		name, ok := launch.PluginNameFromFile(tt.base)
		if name != tt.name || ok != tt.ok {
			t.Errorf("PluginNameFromFile(%q) = %q, %v; want %q, %v", tt.base, name, ok, tt.name, tt.ok)
		}
	}
}

func TestInstall(t *testing.T) {
	t.Parallel()
	k := newKey(t)
	const content = "plugin binary bytes"
	rel := release(t, k, "demo", "1.0.0", content)
	digest := sha256hex(content)
	sums := member{name: "SHA256SUMS", content: digest + "  " + launch.BinaryPrefix + "demo\n" + strings.Repeat("f", 64) + "  other-file\n"}
	sidecar := member{name: launch.BinaryPrefix + "demo.sha256", content: digest + "\n"}
	tests := []struct {
		name    string
		src     func(t *testing.T) string
		ignored []string
	}{
		{"directory", func(t *testing.T) string { return writeDir(t, rel) }, []string{"README.md"}},
		{"tar.gz at the top level", func(t *testing.T) string { return writeTarGz(t, rel) }, []string{"README.md"}},
		{"tar.gz in one directory", func(t *testing.T) string { return writeTarGz(t, under("demo_1.0.0", rel)) }, []string{"demo_1.0.0/README.md"}},
		{"zip with checksums", func(t *testing.T) string { return writeZip(t, append(append([]member{}, rel...), sums, sidecar)) }, []string{"README.md"}},
		{"nested files are ignored", func(t *testing.T) string {
			return writeTarGz(t, append(under("d", rel), member{name: "d/extra/obversa-plugin-other", content: "x"}))
		}, []string{"d/README.md", "d/extra/obversa-plugin-other"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			got, err := launch.Install(tt.src(t), launch.InstallOptions{Dir: dir, Keys: []plugin.PublicKey{k.PublicKey()}})
			if err != nil {
				t.Fatal(err)
			}
			wantPath := filepath.Join(dir, "demo", "1.0.0", launch.BinaryPrefix+"demo")
			if got.Path != wantPath || got.SHA256 != digest || got.KeyID != k.ID() || got.Statement.Name != "demo" || got.AlreadyInstalled {
				t.Errorf("Install = %+v", got)
			}
			if diff := cmp.Diff(tt.ignored, got.Ignored); diff != "" {
				t.Errorf("ignored (-want +got):\n%s", diff)
			}
			b, err := os.ReadFile(wantPath)
			if err != nil || string(b) != content {
				t.Fatalf("installed binary = %q, %v", b, err)
			}
			if st, _ := os.Stat(wantPath); st.Mode().Perm() != 0o555 {
				t.Errorf("installed mode %v, want r-xr-xr-x", st.Mode().Perm())
			}
			if _, err := plugin.VerifySignature(wantPath, wantPath+plugin.SignatureSuffix, []plugin.PublicKey{k.PublicKey()}); err != nil {
				t.Errorf("the installed signature does not verify: %v", err)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Errorf("plugins directory holds %d entries (staging left behind?)", len(entries))
			}
			// Installing the same release again changes nothing.
			again, err := launch.Install(tt.src(t), launch.InstallOptions{Dir: dir, Keys: []plugin.PublicKey{k.PublicKey()}})
			if err != nil || !again.AlreadyInstalled {
				t.Errorf("second Install = %+v, %v; want AlreadyInstalled", again, err)
			}
		})
	}
}

func TestInstallWithoutKeyChecksIntegrityOnly(t *testing.T) {
	t.Parallel()
	k := newKey(t)
	got, err := launch.Install(writeDir(t, release(t, k, "demo", "2", "bytes")), launch.InstallOptions{Dir: t.TempDir()})
	if err != nil || got.KeyID != "" || got.SHA256 != sha256hex("bytes") {
		t.Fatalf("Install without keys = %+v, %v", got, err)
	}
	rel := release(t, k, "demo", "2", "bytes")
	rel[0].content = "swapped"
	_, err = launch.Install(writeDir(t, rel), launch.InstallOptions{Dir: t.TempDir()})
	var ue *plugin.UntrustedError
	if !errors.As(err, &ue) || ue.Reason != plugin.ReasonDigest {
		t.Errorf("Install of a swapped binary without keys = %v, want ReasonDigest", err)
	}
}

func TestInstallRefuses(t *testing.T) {
	t.Parallel()
	k, stranger := newKey(t), newKey(t)
	good := func(t *testing.T) []member { return release(t, k, "demo", "1.0.0", "bytes") }
	tests := []struct {
		name     string
		src      func(t *testing.T) string
		goos     string
		is       error
		mentions []string
	}{
		{"no binary", func(t *testing.T) string {
			return writeDir(t, []member{{name: "cmd-engine", content: "x"}, {name: "README", content: "x"}})
		},
			"", launch.ErrInstall, []string{"no plugin binary", launch.BinaryPrefix + "<name>"}},
		{"binary beside another top-level directory", func(t *testing.T) string {
			ms := good(t)
			return writeTarGz(t, append(under("a", ms), member{name: "b/README", content: "x"}))
		}, "", launch.ErrInstall, []string{"holds a/" + launch.BinaryPrefix + "demo where a plugin binary does not count", "one top-level directory"}},
		{"binary two directories deep", func(t *testing.T) string { return writeTarGz(t, under("a/b", good(t))) },
			"", launch.ErrInstall, []string{"holds a/b/" + launch.BinaryPrefix + "demo where a plugin binary does not count"}},
		{"a signature is never a binary", func(t *testing.T) string { return writeDir(t, good(t)[1:]) },
			"", launch.ErrInstall, []string{"no plugin binary"}},
		{"two binaries", func(t *testing.T) string {
			return writeDir(t, append(good(t), release(t, k, "other", "1", "y")[:2]...))
		}, "", launch.ErrInstall, []string{"2 plugin binaries"}},
		{"unsigned", func(t *testing.T) string { return writeDir(t, good(t)[:1]) }, "", plugin.ErrUntrusted, []string{"no signature"}},
		{"unsigned, in an archive's directory", func(t *testing.T) string { return writeTarGz(t, under("d", good(t)[:1])) },
			"", plugin.ErrUntrusted, []string{"release.tar.gz:d/" + launch.BinaryPrefix + "demo.minisig", "release.tar.gz:d/" + launch.BinaryPrefix + "demo`"}},
		{"signature not by a key", func(t *testing.T) string {
			ms := good(t)
			ms[1].content = "not a signature"
			return writeZip(t, ms)
		}, "", plugin.ErrUntrusted, []string{"release.zip:" + launch.BinaryPrefix + "demo.minisig"}},
		{"wrong key", func(t *testing.T) string { return writeDir(t, release(t, stranger, "demo", "1", "bytes")) },
			"", plugin.ErrUntrusted, []string{stranger.ID()}},
		{"renamed binary", func(t *testing.T) string {
			ms := release(t, k, "demo", "1", "bytes")
			ms[0].name, ms[1].name = launch.BinaryPrefix+"evil", launch.BinaryPrefix+"evil.minisig"
			return writeDir(t, ms)
		}, "", launch.ErrInstall, []string{`signed as plugin "demo"`}},
		{"other platform", func(t *testing.T) string { return writeDir(t, good(t)) }, "plan9", launch.ErrInstall, []string{"this machine is plan9/"}},
		{"checksum sidecar disagrees", func(t *testing.T) string {
			return writeDir(t, append(good(t), member{name: launch.BinaryPrefix + "demo.sha256", content: strings.Repeat("0", 64) + "\n"}))
		}, "", plugin.ErrDigestMismatch, []string{strings.Repeat("0", 64)}},
		{"checksum sidecar is malformed", func(t *testing.T) string {
			return writeDir(t, append(good(t), member{name: "SHA256SUMS", content: "nonsense\n"}))
		}, "", launch.ErrInstall, []string{"SHA256SUMS"}},
		{"path traversal", func(t *testing.T) string {
			return writeTarGz(t, append(good(t), member{name: "../escape", content: "x"}))
		}, "", launch.ErrInstall, []string{"leaves the archive"}},
		{"absolute member", func(t *testing.T) string {
			return writeZip(t, append(good(t), member{name: "/etc/x", content: "x"}))
		}, "", launch.ErrInstall, []string{"leaves the archive"}},
		{"symbolic link in an archive", func(t *testing.T) string {
			return writeTarGz(t, append(good(t), member{name: "link", content: "/etc/passwd", link: true}))
		}, "", launch.ErrInstall, []string{"links are refused"}},
		{"symbolic link as binary in a directory", func(t *testing.T) string {
			ms := good(t)
			target := writeFile(t, t.TempDir(), "real", ms[0].content, 0o755)
			ms[0] = member{name: ms[0].name, content: target, link: true}
			return writeDir(t, ms)
		}, "", launch.ErrInstall, []string{"no plugin binary"}},
		{"a file twice", func(t *testing.T) string {
			ms := good(t)
			return writeTarGz(t, append(ms, under("d", ms[1:2])...))
		}, "", launch.ErrInstall, []string{"twice"}},
		{"unknown archive", func(t *testing.T) string { return writeFile(t, t.TempDir(), "release.rar", "x", 0o644) },
			"", launch.ErrInstall, []string{"release.rar"}},
		{"corrupt archive", func(t *testing.T) string { return writeFile(t, t.TempDir(), "release.tgz", "not gzip", 0o644) },
			"", launch.ErrInstall, []string{"release.tgz"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			_, err := launch.Install(tt.src(t), launch.InstallOptions{Dir: dir, Keys: []plugin.PublicKey{k.PublicKey()}, GOOS: tt.goos})
			if !errors.Is(err, tt.is) {
				t.Fatalf("Install = %v, want %v", err, tt.is)
			}
			for _, m := range tt.mentions {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q lacks %q", err, m)
				}
			}
			// The staging directory is gone by the time anyone reads
			// the error: it names the source's files.
			if strings.Contains(err.Error(), dir) {
				t.Errorf("error %q names the plugins directory's staging copy", err)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 0 {
				t.Errorf("a refused install left %d entries in the plugins directory", len(entries))
			}
		})
	}
}

func TestInstallNeverReplacesAVersion(t *testing.T) {
	t.Parallel()
	k := newKey(t)
	dir := t.TempDir()
	if _, err := launch.Install(writeDir(t, release(t, k, "demo", "1", "first")), launch.InstallOptions{Dir: dir, Keys: []plugin.PublicKey{k.PublicKey()}}); err != nil {
		t.Fatal(err)
	}
	_, err := launch.Install(writeDir(t, release(t, k, "demo", "1", "second")), launch.InstallOptions{Dir: dir, Keys: []plugin.PublicKey{k.PublicKey()}})
	if !errors.Is(err, launch.ErrInstall) || !strings.Contains(err.Error(), "already installed") {
		t.Fatalf("Install of other bytes as the same version = %v, want ErrInstall", err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "demo", "1", launch.BinaryPrefix+"demo"))
	if string(b) != "first" {
		t.Errorf("installed bytes %q, want the first release", b)
	}
}

// FuzzInstallArchive feeds arbitrary bytes to Install as each archive
// format: it must never panic, never write outside the plugins directory
// and fail with ErrInstall, a signature error or an I/O error.
func FuzzInstallArchive(f *testing.F) {
	f.Add([]byte("not an archive"), uint8(0))
	var tgz, zp bytes.Buffer
	func() {
		zw := gzip.NewWriter(&tgz)
		tw := tar.NewWriter(zw)
		for _, m := range []member{{name: "obversa-plugin-x", content: "x"}, {name: "obversa-plugin-x.minisig", content: "sig"}, {name: "../y", content: "y"}} {
			_ = tw.WriteHeader(&tar.Header{Name: m.name, Mode: 0o755, Size: int64(len(m.content)), Typeflag: tar.TypeReg})
			_, _ = tw.Write([]byte(m.content))
		}
		_ = tw.Close()
		_ = zw.Close()
		w := zip.NewWriter(&zp)
		fw, _ := w.Create("d/obversa-plugin-x")
		_, _ = fw.Write([]byte("x"))
		_ = w.Close()
	}()
	f.Add(tgz.Bytes(), uint8(0))
	f.Add(zp.Bytes(), uint8(2))
	exts := []string{".tar.gz", ".tar", ".zip"}
	f.Fuzz(func(t *testing.T, data []byte, kind uint8) {
		root := t.TempDir()
		src := filepath.Join(root, "src"+exts[int(kind)%len(exts)])
		if err := os.WriteFile(src, data, 0o644); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(root, "plugins")
		inst, err := launch.Install(src, launch.InstallOptions{Dir: dir})
		if err == nil {
			if !strings.HasPrefix(inst.Path, dir+string(filepath.Separator)) {
				t.Fatalf("installed outside the plugins directory: %s", inst.Path)
			}
			return
		}
		entries, _ := os.ReadDir(root)
		if len(entries) != 2 {
			t.Fatalf("a failed install left %d entries beside the source", len(entries))
		}
	})
}

func sha256hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
