package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestTakeGit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		committed map[string]file
		setup     func(t *testing.T, repo string) (root string)
		exclude   []string // relative to the repository
		want      []string // manifest paths, relative to root
		noHead    bool     // the repository has no commits
	}{
		{
			name: "tracked, untracked and ignored files",
			committed: map[string]file{
				".gitignore": {Content: "*.log\nbuild/\n"},
				"a.txt":      {Content: "committed"},
				"gone.txt":   {Content: "deleted after the commit"},
				"run.sh":     {Content: "#!/bin/sh\n", Perm: 0o755},
				"link":       {Link: "a.txt"},
			},
			setup: func(t *testing.T, repo string) string {
				writeTree(t, repo, map[string]file{
					"untracked.txt":            {Content: "new"},
					"newdir/nested.txt":        {Content: "new"},
					"debug.log":                {Content: "ignored"},
					"build/out.bin":            {Content: "ignored"},
					".obversa/workspace.lease": {Content: "{}"},
					"store/runs/r1":            {Content: "excluded"},
				})
				if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("edited, not staged"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Remove(filepath.Join(repo, "gone.txt")); err != nil {
					t.Fatal(err)
				}
				return repo
			},
			exclude: []string{"store"},
			want:    []string{".gitignore", "a.txt", "link", "newdir/nested.txt", "run.sh", "untracked.txt"},
		},
		{
			name: "repository without commits",
			setup: func(t *testing.T, repo string) string {
				writeTree(t, repo, map[string]file{"staged.txt": {Content: "s"}, "loose.txt": {Content: "l"}})
				git(t, repo, "add", "staged.txt")
				return repo
			},
			want:   []string{"loose.txt", "staged.txt"},
			noHead: true,
		},
		{
			name: "root is a subdirectory of the work tree",
			committed: map[string]file{
				"top.txt":   {Content: "outside the root"},
				"sub/a.txt": {Content: "a"},
			},
			setup: func(t *testing.T, repo string) string {
				writeTree(t, repo, map[string]file{"sub/u.txt": {Content: "untracked"}, "other.txt": {Content: "outside"}})
				return filepath.Join(repo, "sub")
			},
			want: []string{"a.txt", "u.txt"},
		},
		{
			name:      "tracked directory replaced by a symlink",
			committed: map[string]file{"d/f.txt": {Content: "tracked"}, "keep": {Content: "k"}},
			setup: func(t *testing.T, repo string) string {
				elsewhere := t.TempDir()
				writeTree(t, elsewhere, map[string]file{"f.txt": {Content: "must not be hashed"}})
				if err := os.RemoveAll(filepath.Join(repo, "d")); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(elsewhere, filepath.Join(repo, "d")); err != nil {
					t.Fatal(err)
				}
				return repo
			},
			want: []string{"d", "keep"},
		},
		{
			name:      "tracked files replaced by a FIFO and a socket",
			committed: map[string]file{"a": {Content: "a"}, "fifo": {Content: "f"}, "sock": {Content: "s"}},
			setup: func(t *testing.T, repo string) string {
				for name, mode := range map[string]uint32{"fifo": unix.S_IFIFO, "sock": unix.S_IFSOCK} {
					p := filepath.Join(repo, name)
					if err := os.Remove(p); err != nil {
						t.Fatal(err)
					}
					if err := unix.Mknod(p, mode|0o644, 0); err != nil {
						t.Skipf("mknod %s: %v", name, err)
					}
				}
				return repo
			},
			want: []string{"a"},
		},
		{
			name:      "nested repository is not descended",
			committed: map[string]file{"a": {Content: "a"}},
			setup: func(t *testing.T, repo string) string {
				nested := filepath.Join(repo, "nested")
				if err := os.Mkdir(nested, 0o755); err != nil {
					t.Fatal(err)
				}
				git(t, nested, "init", "-q")
				writeTree(t, nested, map[string]file{"inner.txt": {Content: "i"}})
				return repo
			},
			want: []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			repo := gitRepo(t, tt.committed)
			root := repo
			if tt.setup != nil {
				root = tt.setup(t, repo)
			}
			var o Options
			for _, e := range tt.exclude {
				o.Exclude = append(o.Exclude, filepath.Join(repo, e))
			}
			got, err := Take(context.Background(), root, ProviderGit, o)
			if err != nil {
				t.Fatalf("Take: %v", err)
			}
			want := &Snapshot{Provider: ProviderGit, Root: root, Manifest: entriesOnDisk(t, root, tt.want...)}
			want.Files = len(want.Manifest)
			want.Digest = manifestDigest(want.Manifest)
			if !tt.noHead {
				want.Head = git(t, repo, "rev-parse", "HEAD")
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("snapshot (-want +got):\n%s", diff)
			}
			if err := validate(got); err != nil {
				t.Errorf("Take returned an invalid snapshot: %v", err)
			}
		})
	}
}

func TestTakeGitNotARepository(t *testing.T) {
	needGit(t)
	root := t.TempDir()
	// Stop git from finding a repository above the temporary directory.
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(root))
	_, err := Take(context.Background(), root, ProviderGit, Options{})
	if !errors.Is(err, ErrProvider) {
		t.Fatalf("Take = %v, want ErrProvider", err)
	}
	for _, want := range []string{root, `provider = "files"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if Code(err) != "" {
		t.Errorf("Code = %q, want none for a provider diagnostic", Code(err))
	}
}

// TestTakeGitIgnoresRepositoryEnv runs Take as it would run inside a git
// hook of another repository: the root still decides what is snapshotted.
func TestTakeGitIgnoresRepositoryEnv(t *testing.T) {
	repo := gitRepo(t, map[string]file{"mine.txt": {Content: "m"}})
	other := gitRepo(t, map[string]file{"theirs.txt": {Content: "t"}})
	t.Setenv("GIT_DIR", filepath.Join(other, ".git"))
	t.Setenv("GIT_INDEX_FILE", filepath.Join(other, ".git", "index"))
	got, err := Take(context.Background(), repo, ProviderGit, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(entriesOnDisk(t, repo, "mine.txt"), got.Manifest); diff != "" {
		t.Errorf("manifest (-want +got):\n%s", diff)
	}
	os.Unsetenv("GIT_DIR") // restored by t.Setenv's cleanup
	os.Unsetenv("GIT_INDEX_FILE")
	if want := git(t, repo, "rev-parse", "HEAD"); got.Head != want {
		t.Errorf("Head = %s, want %s (the root's repository)", got.Head, want)
	}
}

// TestGitLeavesRepositoryUntouched checks the promise that the git
// provider never writes: every file under .git — the index above all —
// keeps its bytes and its modification time, even when the index is stale
// (a refresh would rewrite it).
func TestGitLeavesRepositoryUntouched(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]file{"a.txt": {Content: "a"}, "b.txt": {Content: "b"}, "dir/c.txt": {Content: "c"}})
	writeTree(t, repo, map[string]file{"untracked.txt": {Content: "u"}})
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("modified"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Same content, new mtime: the index's stat data is stale for b.txt.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(repo, "b.txt"), later, later); err != nil {
		t.Fatal(err)
	}
	before := gitDirState(t, repo)
	if _, err := Take(context.Background(), repo, ProviderGit, Options{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, gitDirState(t, repo)); diff != "" {
		t.Errorf(".git changed (-before +after):\n%s", diff)
	}
	// Control: a command that does refresh the index (git status, with
	// optional locks allowed) rewrites it here, so the check above would
	// catch a provider that ran one.
	git(t, repo, "status", "--porcelain")
	if after := gitDirState(t, repo); after["index"] == before["index"] {
		t.Error("git status left the index alone too; the scenario does not exercise a stale index")
	}
}

// gitDirState records path → content hash and mtime for every file
// under repo/.git.
func gitDirState(t *testing.T, repo string) map[string]string {
	t.Helper()
	state := map[string]string{}
	gitDir := filepath.Join(repo, ".git")
	err := filepath.WalkDir(gitDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		rel, _ := filepath.Rel(gitDir, p)
		state[rel] = hex.EncodeToString(sum[:]) + " " + fi.ModTime().Format(time.RFC3339Nano)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return state
}
