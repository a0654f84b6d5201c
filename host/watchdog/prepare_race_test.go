package watchdog_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/plugin"
)

// TestPrepareNeverExecutesUnpinnedBytes swaps a plugin's source file by
// rename every 2 ms between the pinned build and another build while
// `obversa run`'s pre-run check (Prepare) starts again and again: no start
// may execute the other bytes. The plugin reports which bytes run by the
// size of its own executable. make test tries 200 starts (about 20 s);
// OBVERSA_RACE_STARTS=1000 tries more.
func TestPrepareNeverExecutesUnpinnedBytes(t *testing.T) {
	starts := 200
	if testing.Short() {
		starts = 50
	}
	if n, err := strconv.Atoi(os.Getenv("OBVERSA_RACE_STARTS")); err == nil && n > 0 {
		starts = n
	}
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pinned, other := filepath.Join(dir, "pinned"), filepath.Join(dir, "other")
	copyFile(t, self, pinned, nil)
	copyFile(t, self, other, []byte("\x00unpinned build"))
	digest, err := plugin.FileSHA256(pinned)
	if err != nil {
		t.Fatal(err)
	}
	pinnedSize, otherSize := fileSize(t, pinned), fileSize(t, other)
	bin := filepath.Join(dir, "plugin-bin")
	swap(t, pinned, bin)

	log := filepath.Join(dir, "executed.log")
	runFile := filepath.Join(dir, "run.hcl")
	text := fmt.Sprintf(`
workspace {
  root     = "."
  provider = "none"
}
plugin "size" {
  type   = "node"
  path   = %q
  sha256 = %q
  env    = { %s = %q }
}
graph "dag" {
  node "n" {
    binding = "size"
    input   = {}
  }
}
`, bin, digest, helperEnv, log)
	if err := os.WriteFile(runFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			src := pinned
			if i%2 == 0 {
				src = other
			}
			swap(t, src, bin)
		}
	}()
	ok, refused := 0, 0
	for i := range starts {
		// Every start launches the plugin: no check receipt is kept.
		if err := os.RemoveAll(launch.CheckedDir(filepath.Join(dir, ".obversa"))); err != nil {
			t.Fatal(err)
		}
		_, err := watchdog.Prepare(context.Background(), runFile, watchdog.PrepareOptions{RunID: fmt.Sprintf("r%d", i)})
		switch {
		case err == nil:
			ok++
		case errors.Is(err, plugin.ErrDigestMismatch):
			refused++
		default:
			close(stop)
			wg.Wait()
			t.Fatalf("start %d: %v", i, err)
		}
	}
	close(stop)
	wg.Wait()

	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, line := range strings.Fields(string(b)) {
		counts[line]++
	}
	t.Logf("%d starts: %d launched, %d refused (digest mismatch); executions by size: %v (pinned %d, other %d)",
		starts, ok, refused, counts, pinnedSize, otherSize)
	if n := counts[strconv.FormatInt(otherSize, 10)]; n != 0 {
		t.Errorf("%d of %d starts executed the unpinned build", n, starts)
	}
	if n := counts[strconv.FormatInt(pinnedSize, 10)]; n != ok || ok == 0 || refused == 0 {
		t.Errorf("pinned executions %d, successful starts %d, refused %d: want equal and both kinds of start", n, ok, refused)
	}
}

// copyFile copies src to dst (mode 0755) and appends extra.
func copyFile(t *testing.T, src, dst string, extra []byte) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err == nil {
		_, err = out.Write(extra)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// swap makes dst name src's bytes by one rename (a hard link renamed over
// it), as a build tool replacing a binary does.
func swap(t *testing.T, src, dst string) {
	tmp := dst + ".swap"
	_ = os.Remove(tmp)
	if err := os.Link(src, tmp); err != nil {
		t.Error(err)
		return
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Error(err)
	}
}
