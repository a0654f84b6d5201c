package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestTakeFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		files   map[string]file
		setup   func(t *testing.T, root string)
		exclude []string // relative to root; "/abs" entries are used as they are
		want    []string // paths expected in the manifest
	}{
		{
			name: "nested files, permissions and empty files",
			files: map[string]file{
				"a.txt":              {Content: "alpha"},
				"bin/run.sh":         {Content: "#!/bin/sh\n", Perm: 0o755},
				"dir/sub/deep.txt":   {Content: "deep"},
				"empty":              {},
				"private/key":        {Content: "k", Perm: 0o600},
				"a/b":                {Content: "sorted after a.txt: '.' < '/'"},
				"name with space.md": {Content: "s"},
			},
			want: []string{"a.txt", "a/b", "bin/run.sh", "dir/sub/deep.txt", "empty", "private/key", "name with space.md"},
		},
		{
			name: "symlinks are recorded, not followed",
			files: map[string]file{
				"real/x.txt": {Content: "x"},
				"dirlink":    {Link: "real"},
				"filelink":   {Link: "real/x.txt"},
				"dangling":   {Link: "does/not/exist"},
				"outside":    {Link: "/etc"},
			},
			want: []string{"dangling", "dirlink", "filelink", "outside", "real/x.txt"},
		},
		{
			name: ".git and .obversa are skipped at every depth",
			files: map[string]file{
				"keep.txt":                 {Content: "k"},
				".git/config":              {Content: "[core]"},
				".obversa/workspace.lease": {Content: "{}"},
				"sub/.git/HEAD":            {Content: "ref: x"},
				"sub/.obversa/state":       {Content: "s"},
				"sub/keep.txt":             {Content: "k"},
				"worktree/.git":            {Content: "gitdir: /elsewhere"},
				"worktree/main.go":         {Content: "package main"},
				"notes/.obversa":           {Content: "a file of that name is kept"},
				".gitignore":               {Content: "kept: only .git itself is skipped"},
				"sub/.obversa-not-state/x": {Content: "kept"},
			},
			want: []string{".gitignore", "keep.txt", "notes/.obversa", "sub/.obversa-not-state/x", "sub/keep.txt", "worktree/main.go"},
		},
		{
			name: "excluded storage directory is skipped",
			files: map[string]file{
				"src/main.go":         {Content: "package main"},
				"store/runs/r1/event": {Content: "e"},
				"store-sibling/x":     {Content: "kept: a prefix is not a parent"},
				"deep/cache/blob":     {Content: "b"},
				"linked-store":        {Link: "/somewhere/else"},
			},
			exclude: []string{"store", "deep/cache", "linked-store", "does-not-exist", "/nowhere/outside"},
			want:    []string{"src/main.go", "store-sibling/x"},
		},
		{
			name:    "excluding the root leaves nothing",
			files:   map[string]file{"a": {Content: "a"}},
			exclude: []string{"."},
			want:    nil,
		},
		{
			name:  "FIFOs are ignored",
			files: map[string]file{"a": {Content: "a"}},
			setup: func(t *testing.T, root string) {
				if err := unix.Mkfifo(filepath.Join(root, "pipe"), 0o644); err != nil {
					t.Skipf("mkfifo: %v", err)
				}
			},
			want: []string{"a"},
		},
		{
			name: "empty workspace",
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			writeTree(t, root, tt.files)
			if tt.setup != nil {
				tt.setup(t, root)
			}
			var o Options
			for _, e := range tt.exclude {
				if !filepath.IsAbs(e) {
					e = filepath.Join(root, e)
				}
				o.Exclude = append(o.Exclude, e)
			}
			got, err := Take(context.Background(), root, ProviderFiles, o)
			if err != nil {
				t.Fatalf("Take: %v", err)
			}
			want := &Snapshot{Provider: ProviderFiles, Root: root, Manifest: entriesOnDisk(t, root, tt.want...)}
			want.Files = len(want.Manifest)
			want.Digest = manifestDigest(want.Manifest)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("snapshot (-want +got):\n%s", diff)
			}
			if err := validate(got); err != nil {
				t.Errorf("Take returned an invalid snapshot: %v", err)
			}
		})
	}
}

func TestTakeFilesSymlinkedRoot(t *testing.T) {
	t.Parallel()
	realRoot := t.TempDir()
	writeTree(t, realRoot, map[string]file{"a.txt": {Content: "a"}, "store/x": {Content: "x"}, "cache/y": {Content: "y"}})
	link := filepath.Join(t.TempDir(), "ws")
	if err := os.Symlink(realRoot, link); err != nil {
		t.Fatal(err)
	}
	// One exclude spelled through the link, one through the real path.
	o := Options{Exclude: []string{filepath.Join(link, "store"), filepath.Join(realRoot, "cache")}}
	got, err := Take(context.Background(), link, ProviderFiles, o)
	if err != nil {
		t.Fatal(err)
	}
	if got.Root != link {
		t.Errorf("Root = %q, want the path as given, %q", got.Root, link)
	}
	if diff := cmp.Diff(entriesOnDisk(t, realRoot, "a.txt"), got.Manifest); diff != "" {
		t.Errorf("manifest (-want +got):\n%s", diff)
	}
}

func TestTakeNone(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "need-not-exist")
	got, err := Take(context.Background(), root, ProviderNone, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := &Snapshot{Provider: ProviderNone, Root: root, Manifest: []Entry{}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("snapshot (-want +got):\n%s", diff)
	}
	if err := Verify(context.Background(), got, Options{}); err != nil {
		t.Errorf("Verify(none) = %v, want nil", err)
	}
}

func TestTakeErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTree(t, dir, map[string]file{"file": {Content: "f"}})
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name     string
		ctx      context.Context
		root     string
		provider string
		o        Options
		is       error  // errors.Is target, if any
		contains string // substring of the message
	}{
		{"unknown provider", context.Background(), dir, "svn", Options{}, ErrProvider, `unknown provider "svn"`},
		{"empty root", context.Background(), "", ProviderFiles, Options{}, nil, "empty root"},
		{"missing root", context.Background(), filepath.Join(dir, "missing"), ProviderFiles, Options{}, fs.ErrNotExist, "missing"},
		{"root is a file", context.Background(), filepath.Join(dir, "file"), ProviderFiles, Options{}, nil, "not a directory"},
		{"relative exclude", context.Background(), dir, ProviderFiles, Options{Exclude: []string{"store"}}, nil, "not an absolute path"},
		{"canceled files", canceled, dir, ProviderFiles, Options{}, context.Canceled, ""},
		{"canceled git", canceled, dir, ProviderGit, Options{}, context.Canceled, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Take(tt.ctx, tt.root, tt.provider, tt.o)
			if err == nil {
				t.Fatalf("Take = %+v, want an error", s)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("Take error %v does not match %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("Take error %q does not contain %q", err, tt.contains)
			}
		})
	}
}

func TestTakeRefusesNonUTF8Names(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "bad\xffname"), []byte("x"), 0o644); err != nil {
		t.Skipf("file system refuses non-UTF-8 names: %v", err)
	}
	_, err := Take(context.Background(), root, ProviderFiles, Options{})
	if !errors.Is(err, ErrProvider) || !strings.Contains(err.Error(), `"bad\xffname"`) {
		t.Errorf("Take = %v, want ErrProvider naming the file", err)
	}
}

func TestTakeLargeFileStreams(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	// Larger than several copy buffers, and not a multiple of one.
	data := []byte(strings.Repeat("0123456789abcdef", 3*hashBufSize/16+7))
	if err := os.WriteFile(filepath.Join(root, "big"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Take(context.Background(), root, ProviderFiles, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(entriesOnDisk(t, root, "big"), got.Manifest); diff != "" {
		t.Errorf("manifest (-want +got):\n%s", diff)
	}
}

// TestCancelMidway cancels between the steps Take checks its context
// before: the walk and the hashing notice on their own.
func TestCancelMidway(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	files := map[string]file{}
	for i := range 2 * ctxCheckEvery {
		files[fmt.Sprintf("f%03d", i)] = file{Content: "x"}
	}
	writeTree(t, root, files)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := listFiles(ctx, root, excluder{}); !errors.Is(err, context.Canceled) {
		t.Errorf("listFiles = %v, want context.Canceled", err)
	}
	cands, err := listFiles(context.Background(), root, excluder{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hashAll(ctx, root, cands); !errors.Is(err, context.Canceled) {
		t.Errorf("hashAll = %v, want context.Canceled", err)
	}
}
