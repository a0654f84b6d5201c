package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// ent builds an entry whose hash is the hex digit h repeated.
func ent(path string, mode uint32, size int64, h byte) Entry {
	return Entry{Path: path, Mode: mode, Size: size, SHA256: strings.Repeat(string(h), 64)}
}

func snap(head string, m ...Entry) *Snapshot {
	return &Snapshot{Provider: ProviderGit, Root: "/ws", Head: head, Files: len(m), Manifest: m, Digest: manifestDigest(m)}
}

func TestCompare(t *testing.T) {
	t.Parallel()
	headA, headB := strings.Repeat("a", 40), strings.Repeat("b", 40)
	tests := []struct {
		name      string
		want, got *Snapshot
		changes   []Change
	}{
		{
			name: "equal",
			want: snap(headA, ent("a", 0o100644, 1, 'a'), ent("b", 0o100644, 1, 'b')),
			got:  snap(headA, ent("a", 0o100644, 1, 'a'), ent("b", 0o100644, 1, 'b')),
		},
		{
			name: "both empty",
			want: snap(""), got: snap(""),
		},
		{
			name:    "added",
			want:    snap("", ent("b", 0o100644, 1, 'b')),
			got:     snap("", ent("a", 0o100644, 1, 'a'), ent("b", 0o100644, 1, 'b'), ent("c", 0o100644, 1, 'c')),
			changes: []Change{{Path: "a", Kind: KindAdded}, {Path: "c", Kind: KindAdded}},
		},
		{
			name:    "removed",
			want:    snap("", ent("a", 0o100644, 1, 'a'), ent("b", 0o100644, 1, 'b'), ent("c", 0o100644, 1, 'c')),
			got:     snap("", ent("b", 0o100644, 1, 'b')),
			changes: []Change{{Path: "a", Kind: KindRemoved}, {Path: "c", Kind: KindRemoved}},
		},
		{
			name:    "content modified, same size",
			want:    snap("", ent("a", 0o100644, 1, 'a')),
			got:     snap("", ent("a", 0o100644, 1, 'f')),
			changes: []Change{{Path: "a", Kind: KindModified}},
		},
		{
			name:    "size modified",
			want:    snap("", ent("a", 0o100644, 1, 'a')),
			got:     snap("", ent("a", 0o100644, 2, 'a')),
			changes: []Change{{Path: "a", Kind: KindModified}},
		},
		{
			name:    "mode change",
			want:    snap("", ent("run.sh", 0o100644, 1, 'a')),
			got:     snap("", ent("run.sh", 0o100755, 1, 'a')),
			changes: []Change{{Path: "run.sh", Kind: KindModified}},
		},
		{
			name:    "file became a symlink",
			want:    snap("", ent("x", 0o100644, 1, 'a')),
			got:     snap("", ent("x", ModeSymlink, 1, 'a')),
			changes: []Change{{Path: "x", Kind: KindModified}},
		},
		{
			name:    "head moved, tree equal",
			want:    snap(headA, ent("a", 0o100644, 1, 'a')),
			got:     snap(headB, ent("a", 0o100644, 1, 'a')),
			changes: []Change{{Path: "HEAD", Kind: KindHead, Want: headA, Got: headB}},
		},
		{
			name:    "first commit",
			want:    snap(""),
			got:     snap(headA),
			changes: []Change{{Path: "HEAD", Kind: KindHead, Got: headA}},
		},
		{
			name: "mixed, head first then by path",
			want: snap(headA, ent("a.txt", 0o100644, 1, 'a'), ent("a/x", 0o100644, 1, 'a'), ent("m", 0o100644, 1, 'a'), ent("z", 0o100644, 1, 'a')),
			got:  snap(headB, ent("a.txt", 0o100644, 1, 'b'), ent("b", 0o100644, 1, 'a'), ent("m", 0o100644, 1, 'a'), ent("y", 0o100644, 1, 'a')),
			changes: []Change{
				{Path: "HEAD", Kind: KindHead, Want: headA, Got: headB},
				{Path: "a.txt", Kind: KindModified},
				{Path: "a/x", Kind: KindRemoved},
				{Path: "b", Kind: KindAdded},
				{Path: "y", Kind: KindAdded},
				{Path: "z", Kind: KindRemoved},
			},
		},
		{
			name:    "unsorted manifests are compared by path",
			want:    &Snapshot{Manifest: []Entry{ent("b", 0o100644, 1, 'b'), ent("a", 0o100644, 1, 'a')}},
			got:     &Snapshot{Manifest: []Entry{ent("a", 0o100644, 1, 'a'), ent("c", 0o100644, 1, 'c')}},
			changes: []Change{{Path: "b", Kind: KindRemoved}, {Path: "c", Kind: KindAdded}},
		},
		{
			name:    "nil want counts as empty",
			want:    nil,
			got:     snap("", ent("a", 0o100644, 1, 'a')),
			changes: []Change{{Path: "a", Kind: KindAdded}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.changes, Compare(tt.want, tt.got)); diff != "" {
				t.Errorf("Compare (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVerifyFiles(t *testing.T) {
	t.Parallel()
	base := map[string]file{
		"a.txt":      {Content: "alpha"},
		"b.txt":      {Content: "bravo"},
		"run.sh":     {Content: "#!/bin/sh\n", Perm: 0o755},
		"dir/c.txt":  {Content: "charlie"},
		"store/blob": {Content: "excluded"},
	}
	tests := []struct {
		name    string
		mutate  func(t *testing.T, root string)
		changes []Change
	}{
		{name: "untouched", mutate: func(*testing.T, string) {}},
		{
			name: "rewritten with the same content",
			mutate: func(t *testing.T, root string) {
				writeFile(t, filepath.Join(root, "a.txt"), "alpha")
			},
		},
		{
			name: "excluded directory changed",
			mutate: func(t *testing.T, root string) {
				writeFile(t, filepath.Join(root, "store/new"), "more storage")
			},
		},
		{
			name: "lease taken",
			mutate: func(t *testing.T, root string) {
				l, err := AcquireLease(root, "run-1")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Release() })
			},
		},
		{
			name:    "file added",
			mutate:  func(t *testing.T, root string) { writeFile(t, filepath.Join(root, "dir/new.txt"), "n") },
			changes: []Change{{Path: "dir/new.txt", Kind: KindAdded}},
		},
		{
			name: "file removed",
			mutate: func(t *testing.T, root string) {
				if err := os.Remove(filepath.Join(root, "b.txt")); err != nil {
					t.Fatal(err)
				}
			},
			changes: []Change{{Path: "b.txt", Kind: KindRemoved}},
		},
		{
			name:    "content changed, same size",
			mutate:  func(t *testing.T, root string) { writeFile(t, filepath.Join(root, "a.txt"), "ALPHA") },
			changes: []Change{{Path: "a.txt", Kind: KindModified}},
		},
		{
			name: "executable bit dropped",
			mutate: func(t *testing.T, root string) {
				if err := os.Chmod(filepath.Join(root, "run.sh"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			changes: []Change{{Path: "run.sh", Kind: KindModified}},
		},
		{
			name: "file replaced by a symlink to identical content",
			mutate: func(t *testing.T, root string) {
				p := filepath.Join(root, "b.txt")
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink("a.txt", p); err != nil {
					t.Fatal(err)
				}
			},
			changes: []Change{{Path: "b.txt", Kind: KindModified}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			writeTree(t, root, base)
			o := Options{Exclude: []string{filepath.Join(root, "store")}}
			want, err := Take(context.Background(), root, ProviderFiles, o)
			if err != nil {
				t.Fatal(err)
			}
			tt.mutate(t, root)
			err = Verify(context.Background(), want, o)
			if tt.changes == nil {
				if err != nil {
					t.Fatalf("Verify = %v, want nil", err)
				}
				return
			}
			var de *DriftError
			if !errors.As(err, &de) || !errors.Is(err, ErrDrift) || Code(err) != "WORKSPACE_DRIFT" {
				t.Fatalf("Verify = %v, want a *DriftError", err)
			}
			if de.Root != root {
				t.Errorf("DriftError.Root = %q, want %q", de.Root, root)
			}
			if diff := cmp.Diff(tt.changes, de.Changes); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVerifyGitHeadMoved(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]file{"a.txt": {Content: "a"}})
	writeTree(t, repo, map[string]file{"b.txt": {Content: "b"}})
	want, err := Take(context.Background(), repo, ProviderGit, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(context.Background(), want, Options{}); err != nil {
		t.Fatalf("Verify before any change = %v", err)
	}
	oldHead := want.Head
	// Committing the untracked file changes no file, only HEAD.
	git(t, repo, "add", "b.txt")
	git(t, repo, "commit", "-q", "-m", "second")
	newHead := git(t, repo, "rev-parse", "HEAD")
	err = Verify(context.Background(), want, Options{})
	var de *DriftError
	if !errors.As(err, &de) {
		t.Fatalf("Verify = %v, want a *DriftError", err)
	}
	if diff := cmp.Diff([]Change{{Path: "HEAD", Kind: KindHead, Want: oldHead, Got: newHead}}, de.Changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if !strings.Contains(err.Error(), "HEAD moved from "+oldHead+" to "+newHead) {
		t.Errorf("message %q does not describe the move", err)
	}
}

func TestVerifyRejectsInvalidSnapshot(t *testing.T) {
	t.Parallel()
	bad := snap("", ent("a", 0o100644, 1, 'a'))
	bad.Digest = "sha256:" + strings.Repeat("0", 64)
	for _, s := range []*Snapshot{nil, bad} {
		if err := Verify(context.Background(), s, Options{}); !errors.Is(err, ErrInvalidSnapshot) {
			t.Errorf("Verify(%v) = %v, want ErrInvalidSnapshot", s, err)
		}
	}
}

func TestDriftErrorMessage(t *testing.T) {
	t.Parallel()
	var changes []Change
	for i := range 12 {
		changes = append(changes, Change{Path: fmt.Sprintf("f%02d", i), Kind: KindModified})
	}
	tests := []struct {
		name    string
		changes []Change
		want    string
	}{
		{
			name:    "one change",
			changes: []Change{{Path: "a.txt", Kind: KindAdded}},
			want:    "WORKSPACE_DRIFT: workspace /ws has 1 change since its snapshot: added a.txt",
		},
		{
			name:    "ambiguous path is quoted",
			changes: []Change{{Path: "a b,c", Kind: KindRemoved}, {Path: "d", Kind: KindModified}},
			want:    `WORKSPACE_DRIFT: workspace /ws has 2 changes since its snapshot: removed "a b,c", modified d`,
		},
		{
			name:    "head",
			changes: []Change{{Path: "HEAD", Kind: KindHead, Got: "abc"}},
			want:    "WORKSPACE_DRIFT: workspace /ws has 1 change since its snapshot: HEAD moved from (no commit) to abc",
		},
		{
			name:    "ten named, the rest counted",
			changes: changes,
			want: "WORKSPACE_DRIFT: workspace /ws has 12 changes since its snapshot: " +
				"modified f00, modified f01, modified f02, modified f03, modified f04, " +
				"modified f05, modified f06, modified f07, modified f08, modified f09, and 2 more",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := (&DriftError{Root: "/ws", Changes: tt.changes}).Error()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Error() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"drift", &DriftError{Changes: []Change{{Path: "a", Kind: KindAdded}}}, "WORKSPACE_DRIFT"},
		{"wrapped drift", fmt.Errorf("resume: %w", &DriftError{}), "WORKSPACE_DRIFT"},
		{"lease", &LeaseError{Holder: "run-1"}, "WORKSPACE_LEASE"},
		{"wrapped lease", fmt.Errorf("watchdog: %w", &LeaseError{}), "WORKSPACE_LEASE"},
		{"invalid anchor", invalidf("bad"), "WORKSPACE_ANCHOR_INVALID"},
		{"provider", fmt.Errorf("x: %w", ErrProvider), ""},
		{"other", io.EOF, ""},
		{"canceled", context.Canceled, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Code(tt.err); got != tt.want {
				t.Errorf("Code(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
