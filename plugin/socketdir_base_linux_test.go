package plugin

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// entries lists dir's names, failing t on an error.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.Name()
	}
	return names
}

// A base directory that is not private is refused with an error naming
// it and the fix, and no directory is made in its place: a fresh one at
// every call was never swept. A private candidate after it is taken, the
// same one at every call.
func TestChooseBaseRefusesOpenDir(t *testing.T) {
	uid := os.Getuid()
	parent, err := os.MkdirTemp("/tmp", "obt-") // short: t.TempDir's names pass maxBaseLen
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(parent) })
	open := filepath.Join(parent, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(parent, "link")
	if err := os.Symlink(open, link); err != nil {
		t.Fatal(err)
	}
	long := filepath.Join(parent, strings.Repeat("x", maxBaseLen))
	for _, tc := range []struct{ dir, want string }{
		{open, "has mode 0777"},
		{link, "is not a directory"},
		{long, "longer than"},
	} {
		for range 2 {
			_, err := chooseBase([]string{tc.dir}, uid)
			if !errors.Is(err, ErrSocketDir) || !strings.Contains(err.Error(), tc.dir) ||
				!strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "chmod 700") ||
				!strings.Contains(err.Error(), "XDG_RUNTIME_DIR") {
				t.Errorf("chooseBase(%s) = %v; want ErrSocketDir naming it, %q and the fix", tc.dir, err, tc.want)
			}
		}
	}
	if got := entries(t, parent); len(got) != 2 {
		t.Errorf("%s holds %v after refusals; want only open and link", parent, got)
	}
	private := filepath.Join(parent, "private")
	for range 2 {
		got, err := chooseBase([]string{open, private}, uid)
		if err != nil || got != private {
			t.Fatalf("chooseBase(open, private) = %q, %v; want %s", got, err, private)
		}
	}
	if p := privateProblem(private, uid); p != "" {
		t.Errorf("the directory chooseBase made is not private: %s", p)
	}
	if got := entries(t, parent); len(got) != 3 {
		t.Errorf("%s holds %v; want open, link and private", parent, got)
	}
}

// A sweep removes a dead process's directories, keeps a locked one and
// everything not named as a process's, and allocates a bounded amount
// however many entries the base holds: a worker once listed thousands
// beside its executor and collected garbage there.
func TestSweepDeadAllocations(t *testing.T) {
	base := t.TempDir()
	const others = 3000
	for i := range others {
		name := "leftover-" + strconv.Itoa(i)
		if i%2 == 0 {
			if err := os.Mkdir(filepath.Join(base, name), 0o700); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(filepath.Join(base, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"h1-dead", newDirPrefix + "dead", "h2-live", "hx-other", "h-other"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	live, err := os.Open(filepath.Join(base, "h2-live"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if err := syscall.Flock(int(live.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	sweepDead(base)
	for _, d := range []string{"h1-dead", newDirPrefix + "dead"} {
		if _, err := os.Lstat(filepath.Join(base, d)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the dead process directory %s is left: %v", d, err)
		}
	}
	if got := len(entries(t, base)); got != others+3 {
		t.Errorf("%d entries left; want %d: the others, h2-live, hx-other and h-other", got, others+3)
	}
	// The directory is read into one buffer; an allocation per entry
	// would be thousands.
	const most = 16
	if allocs := testing.AllocsPerRun(5, func() { sweepDead(base) }); allocs > most {
		t.Errorf("a sweep of %d entries allocated %.0f times; want at most %d", others+3, allocs, most)
	}
}
