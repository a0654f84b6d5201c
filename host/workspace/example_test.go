package workspace_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/obversa/obversa/host/workspace"
)

// A snapshot taken before a worker starts is verified before the next one
// starts; an edit in between is drift.
func ExampleVerify() {
	root, err := os.MkdirTemp("", "workspace-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)
	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("draft"), 0o644)

	ctx := context.Background()
	snap, err := workspace.Take(ctx, root, workspace.ProviderFiles, workspace.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println("files:", snap.Files)

	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("final"), 0o644)
	os.WriteFile(filepath.Join(root, "extra.txt"), []byte("new"), 0o644)

	err = workspace.Verify(ctx, snap, workspace.Options{})
	fmt.Println("code:", workspace.Code(err))
	var drift *workspace.DriftError
	if errors.As(err, &drift) {
		for _, c := range drift.Changes {
			fmt.Println(c.Kind, c.Path)
		}
	}
	// Output:
	// files: 1
	// code: WORKSPACE_DRIFT
	// added extra.txt
	// modified notes.txt
}

func ExampleCompare() {
	entry := func(path, hash string) workspace.Entry {
		return workspace.Entry{Path: path, Mode: workspace.ModeRegular | 0o644, Size: 1, SHA256: hash}
	}
	want := &workspace.Snapshot{Manifest: []workspace.Entry{entry("a.txt", "1"), entry("b.txt", "2")}}
	got := &workspace.Snapshot{Manifest: []workspace.Entry{entry("a.txt", "3"), entry("c.txt", "4")}}
	for _, c := range workspace.Compare(want, got) {
		fmt.Println(c.Kind, c.Path)
	}
	// Output:
	// modified a.txt
	// removed b.txt
	// added c.txt
}

// Two runs cannot work in the same directory at once.
func ExampleAcquireLease() {
	root, err := os.MkdirTemp("", "workspace-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)

	lease, err := workspace.AcquireLease(root, "run-1")
	if err != nil {
		panic(err)
	}
	_, err = workspace.AcquireLease(root, "run-2")
	var held *workspace.LeaseError
	if errors.As(err, &held) {
		fmt.Println(workspace.Code(err), "held by", held.Holder)
	}
	lease.Release()
	// Output:
	// WORKSPACE_LEASE held by run-1
}
