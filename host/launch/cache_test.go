package launch_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/plugin"
)

// markerPlugin writes a script that leaves "<script>.ran" when executed;
// it is never a working plugin, so a test can tell whether it was run.
// Its $0 is /proc/self/fd/N when it runs from the verified open file,
// which readlink resolves to the file it runs as.
func markerPlugin(t *testing.T, dir string) (path, digest string) {
	t.Helper()
	path = writeFile(t, dir, "marker-plugin", "#!/bin/sh\necho ran > \"$(readlink -f \"$0\").ran\"\n", 0o755)
	digest, err := plugin.FileSHA256(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, digest
}

// cache places src in storage's plugin cache as a run start does.
func cache(t *testing.T, storage, src, digest string) (string, error) {
	t.Helper()
	s, err := launch.CheckSource("p", src, digest, nil, storage)
	return s.Cached, err
}

func TestCacheIsContentAddressedAndReadOnly(t *testing.T) {
	t.Parallel()
	storage := t.TempDir()
	src, digest := markerPlugin(t, t.TempDir())
	got, err := cache(t, storage, src, digest)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(storage, "plugins", "sha256", digest); got != want {
		t.Errorf("Cache = %s, want %s", got, want)
	}
	st, err := os.Stat(got)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o555 {
		t.Errorf("cache entry mode %v, want r-xr-xr-x", st.Mode().Perm())
	}
	// Checking the same bytes again reuses the entry; the source may then
	// vanish: the entry stays.
	again, err := launch.CheckSource("p", src, digest, nil, storage)
	if err != nil || again.Cached != got {
		t.Errorf("CheckSource again = %+v, %v; want the existing entry", again, err)
	}
	if err := os.Remove(src); err != nil {
		t.Fatal(err)
	}
	if err := launch.VerifyCached("p", got, digest); err != nil {
		t.Errorf("VerifyCached = %v", err)
	}
}

func TestCacheRefusesWrongSource(t *testing.T) {
	t.Parallel()
	src, _ := markerPlugin(t, t.TempDir())
	wrong := strings.Repeat("0", 64)
	_, err := cache(t, t.TempDir(), src, wrong)
	if !errors.Is(err, plugin.ErrDigestMismatch) {
		t.Fatalf("Cache(wrong digest) = %v, want ErrDigestMismatch", err)
	}
}

// tamper replaces a read-only cache entry's bytes, as an attacker with
// the same user id could.
func tamper(t *testing.T, path string) {
	t.Helper()
	if err := os.Chmod(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho tampered > \"$(readlink -f \"$0\").ran\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestTamperedCacheIsPluginChanged(t *testing.T) {
	t.Parallel()
	storage := t.TempDir()
	src, digest := markerPlugin(t, t.TempDir())
	cached, err := cache(t, storage, src, digest)
	if err != nil {
		t.Fatal(err)
	}
	tamper(t, cached)
	for name, err := range map[string]error{
		"VerifyCached": launch.VerifyCached("p", cached, digest),
		"CheckSource":  func() error { _, err := launch.CheckSource("p", src, digest, nil, storage); return err }(),
	} {
		if !errors.Is(err, launch.ErrPluginChanged) || strings.Count(err.Error(), "PLUGIN_CHANGED") != 1 || !strings.Contains(err.Error(), digest) ||
			!strings.Contains(err.Error(), "remove it (rm "+cached+")") {
			t.Errorf("%s = %v, want PLUGIN_CHANGED once, naming the pinned digest and how to let the next run copy it again", name, err)
		}
	}
	// Start refuses before executing anything.
	_, err = launch.Start(context.Background(), []plan.PluginPlan{{Name: "p", Type: "engine", SHA256: digest, Source: src}}, launch.Options{StorageDir: storage})
	if !errors.Is(err, launch.ErrPluginChanged) {
		t.Fatalf("Start = %v, want ErrPluginChanged", err)
	}
	if _, err := os.Stat(cached + ".ran"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the tampered entry was executed (stat: %v)", err)
	}

	if err := os.Remove(cached); err != nil {
		t.Fatal(err)
	}
	if err := launch.VerifyCached("p", cached, digest); !errors.Is(err, launch.ErrPluginChanged) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("VerifyCached(deleted) = %v, want PLUGIN_CHANGED (missing)", err)
	}
}

// TestStartLaunchesFromCache shows that Start executes the cached copy,
// not the source: the marker appears beside the cache entry.
func TestStartLaunchesFromCache(t *testing.T) {
	t.Parallel()
	storage := t.TempDir()
	src, digest := markerPlugin(t, t.TempDir())
	cached, err := cache(t, storage, src, digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The marker script never completes a handshake, so Start fails, but
	// only after executing the cached bytes.
	_, err = launch.Start(context.Background(), []plan.PluginPlan{{Name: "p", Type: "engine", SHA256: digest, Source: src}}, launch.Options{StorageDir: storage})
	if !errors.Is(err, plugin.ErrHandshake) {
		t.Fatalf("Start = %v, want ErrHandshake", err)
	}
	if _, err := os.Stat(cached + ".ran"); err != nil {
		t.Errorf("the cached copy did not run: %v", err)
	}
	if _, err := os.Stat(src + ".ran"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the source ran (stat: %v)", err)
	}
}

// TestStartHashesAChangedStampedEntry: an entry changed after the host
// took its stamp — rewritten in place or replaced by rename — is hashed
// again by Start and refused with PLUGIN_CHANGED before anything runs.
func TestStartHashesAChangedStampedEntry(t *testing.T) {
	t.Parallel()
	for name, change := range map[string]func(t *testing.T, cached string){
		"in place": tamper,
		"renamed over": func(t *testing.T, cached string) {
			evil := writeFile(t, t.TempDir(), "evil", "#!/bin/sh\necho tampered > \"$(readlink -f \"$0\").ran\"\n", 0o755)
			if err := os.Rename(evil, cached); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			storage := t.TempDir()
			src, digest := markerPlugin(t, t.TempDir())
			cached, err := cache(t, storage, src, digest)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(cached)
			if err != nil {
				t.Fatal(err)
			}
			stamp, err := plugin.StampOf(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond) // past the clock's tick
			change(t, cached)
			_, err = launch.Start(context.Background(), []plan.PluginPlan{{Name: "p", Type: "engine", SHA256: digest, Source: src}},
				launch.Options{StorageDir: storage, Stamps: map[string]plugin.FileStamp{digest: stamp}})
			if !errors.Is(err, launch.ErrPluginChanged) || !strings.Contains(err.Error(), digest) {
				t.Fatalf("Start = %v, want PLUGIN_CHANGED naming %s", err, digest)
			}
			if _, err := os.Stat(cached + ".ran"); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the changed entry was executed (stat: %v)", err)
			}
		})
	}
}
