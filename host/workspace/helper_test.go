package workspace

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// helperEnv selects a helper-process mode when the test binary is
// re-executed by a test (see runHelper).
const helperEnv = "WORKSPACE_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode, os.Args[len(os.Args)-2], os.Args[len(os.Args)-1]))
	}
	// Keep the developer's git configuration (global excludes, hooks,
	// default branch hints) out of every git command, ours and Take's.
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	os.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	os.Unsetenv("GIT_OPTIONAL_LOCKS") // the index test's control needs a refreshing git status
	os.Exit(m.Run())
}

// runHelper is the body of a re-executed test binary:
//
//   - "hold": take the lease of root as holder, print "held", and keep it
//     until stdin closes;
//   - "try": try to take it and print the outcome as JSON
//     {"code": Code(err), "holder": ..., "pid": ...}, then release.
func runHelper(mode, root, holder string) int {
	switch mode {
	case "hold":
		l, err := AcquireLease(root, holder)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("held")
		bufio.NewReader(os.Stdin).ReadString(0) // until EOF
		if err := l.Release(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	case "try":
		out := helperResult{}
		l, err := AcquireLease(root, holder)
		out.Code = Code(err)
		if le, ok := err.(*LeaseError); ok {
			out.Holder, out.PID = le.Holder, le.PID
		} else if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		json.NewEncoder(os.Stdout).Encode(out)
		if err := l.Release(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
	return 2
}

// helperResult is what a "try" helper prints.
type helperResult struct {
	Code   string `json:"code"`
	Holder string `json:"holder"`
	PID    int    `json:"pid"`
}

// helperCommand re-executes the test binary in the given helper mode.
func helperCommand(t *testing.T, mode, root, holder string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", root, holder)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.Stderr = os.Stderr
	return cmd
}

// file describes one path to create: a regular file with Content and
// Perm (0o644 when zero), or a symlink to Link.
type file struct {
	Content string
	Perm    fs.FileMode
	Link    string
}

// writeTree creates files under root, making parent directories.
func writeTree(t testing.TB, root string, files map[string]file) {
	t.Helper()
	for rel, f := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if f.Link != "" {
			if err := os.Symlink(f.Link, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		perm := f.Perm
		if perm == 0 {
			perm = 0o644
		}
		if err := os.WriteFile(p, []byte(f.Content), perm); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, perm); err != nil { // not subject to umask
			t.Fatal(err)
		}
	}
}

// entriesOnDisk builds the expected manifest entries for paths under root
// by reading them whole — independently of the package's streaming code.
func entriesOnDisk(t testing.TB, root string, paths ...string) []Entry {
	t.Helper()
	out := []Entry{}
	for _, rel := range paths {
		p := filepath.Join(root, filepath.FromSlash(rel))
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		var data []byte
		mode := uint32(0o100000) | uint32(fi.Mode().Perm())
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			if err != nil {
				t.Fatal(err)
			}
			data, mode = []byte(target), 0o120000
		} else if data, err = os.ReadFile(p); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		out = append(out, Entry{Path: rel, Mode: mode, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])})
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// git runs git in dir with a fixed identity and returns its trimmed
// stdout.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	full := append([]string{"-C", dir, "-c", "user.email=test@example.com", "-c", "user.name=Test", "-c", "init.defaultBranch=main", "-c", "commit.gpgSign=false"}, args...)
	out, err := exec.Command("git", full...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// needGit skips tests of the git provider where git is not installed.
func needGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
}

// gitRepo creates a repository in a new temporary directory, commits
// committed (if any) and returns its path.
func gitRepo(t testing.TB, committed map[string]file) string {
	t.Helper()
	needGit(t)
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	if len(committed) > 0 {
		writeTree(t, dir, committed)
		git(t, dir, "add", "-A")
		git(t, dir, "commit", "-q", "-m", "initial")
	}
	return dir
}
