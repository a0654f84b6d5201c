package watchdog

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/obversa/obversa/store"
)

// socketPair returns the two ends of a blocking Unix stream socket.
func socketPair(t *testing.T) (mine, theirs *os.File) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	mine, theirs = os.NewFile(uintptr(fds[0]), "mine"), os.NewFile(uintptr(fds[1]), "theirs")
	t.Cleanup(func() { mine.Close(); theirs.Close() })
	return mine, theirs
}

// TestHandoffCarriesFilesAndEnv sends a hand-over line with two real
// files, as Prestarted.handOver does, and checks that receiveHandoff sets
// each variable, points each descriptor variable at a descriptor of the
// same file received close-on-exec, and leaves the rest of the stream.
func TestHandoffCarriesFilesAndEnv(t *testing.T) {
	dir := t.TempDir()
	var files []*os.File
	for _, name := range []string{"lock", "keeper"} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		files = append(files, f)
	}
	for _, name := range []string{store.LockFDEnv, KeeperFDEnv, "OBVERSA_TEST_HANDED"} {
		t.Setenv(name, "")
	}
	mine, theirs := socketPair(t)
	line := `{"` + store.LockFDEnv + `":"3","` + KeeperFDEnv + `":"4","OBVERSA_TEST_HANDED":"yes"}` + "\nafter"
	if err := sendWithFiles(mine, []byte(line), files); err != nil {
		t.Fatal(err)
	}
	mine.Close()
	rest, err := receiveHandoff(theirs)
	if err != nil {
		t.Fatal(err)
	}
	if got := os.Getenv("OBVERSA_TEST_HANDED"); got != "yes" {
		t.Errorf("OBVERSA_TEST_HANDED = %q, want yes", got)
	}
	for i, name := range []string{store.LockFDEnv, KeeperFDEnv} {
		fd, err := strconv.Atoi(os.Getenv(name))
		if err != nil {
			t.Fatalf("%s = %q: %v", name, os.Getenv(name), err)
		}
		var got, want syscall.Stat_t
		if err := syscall.Fstat(fd, &got); err != nil {
			t.Fatalf("%s: descriptor %d: %v", name, fd, err)
		}
		if err := syscall.Fstat(int(files[i].Fd()), &want); err != nil {
			t.Fatal(err)
		}
		if got.Ino != want.Ino || got.Dev != want.Dev {
			t.Errorf("%s names descriptor %d, not a descriptor of %s", name, fd, files[i].Name())
		}
		if flags, err := fcntl(fd, syscall.F_GETFD); err != nil || flags&syscall.FD_CLOEXEC == 0 {
			t.Errorf("%s: descriptor %d is not close-on-exec (flags %#x, %v)", name, fd, flags, err)
		}
		syscall.Close(fd)
	}
	if b, err := io.ReadAll(rest); err != nil || string(b) != "after" {
		t.Errorf("rest of stdin = %q, %v; want \"after\"", b, err)
	}
}

// fcntl returns fcntl(fd, cmd, 0).
func fcntl(fd, cmd int) (int, error) {
	r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), uintptr(cmd), 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}

// TestHandoffRefusals: a stream that ends before the line, a line that is
// no JSON object, and a descriptor variable naming no descriptor sent
// are each ErrNotFromWatchdog.
func TestHandoffRefusals(t *testing.T) {
	t.Setenv(store.LockFDEnv, "")
	for _, line := range []string{"", "{\"a\":", "[]\n", `{"` + store.LockFDEnv + `":"3"}` + "\n", `{"` + store.LockFDEnv + `":"x"}` + "\n"} {
		mine, theirs := socketPair(t)
		if line != "" {
			if _, err := mine.Write([]byte(line)); err != nil {
				t.Fatal(err)
			}
		}
		mine.Close()
		if _, err := receiveHandoff(theirs); !errors.Is(err, ErrNotFromWatchdog) {
			t.Errorf("receiveHandoff(%q) = %v, want ErrNotFromWatchdog", line, err)
		}
	}
}

// FuzzPlaceFiles: placeFiles either names, for every descriptor variable,
// one of the descriptors received, or refuses with ErrNotFromWatchdog.
func FuzzPlaceFiles(f *testing.F) {
	f.Add("3", "4", 2)
	f.Add("-1", "99999999999999999999", 0)
	f.Add("", "5", 3)
	f.Fuzz(func(t *testing.T, lock, keeper string, n int) {
		n = min(max(n, 0), 8)
		received := make([]int, n)
		for i := range received {
			received[i] = 100 + i
		}
		vars := map[string]string{store.LockFDEnv: lock, KeeperFDEnv: keeper}
		err := placeFiles(vars, received)
		if err != nil {
			if !errors.Is(err, ErrNotFromWatchdog) {
				t.Fatalf("placeFiles: %v, want ErrNotFromWatchdog", err)
			}
			return
		}
		for _, name := range []string{store.LockFDEnv, KeeperFDEnv} {
			fd, err := strconv.Atoi(vars[name])
			if err != nil || fd < 100 || fd >= 100+n {
				t.Fatalf("%s = %q, not a descriptor received", name, vars[name])
			}
		}
	})
}
