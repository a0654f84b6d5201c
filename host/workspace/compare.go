package workspace

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Change kinds reported by Compare.
const (
	KindAdded    = "added"    // the path exists now and did not before
	KindRemoved  = "removed"  // the path existed before and does not now
	KindModified = "modified" // content, size, permissions or type changed
	KindHead     = "head"     // the git HEAD commit moved
)

// headPath is Change.Path of a KindHead change.
const headPath = "HEAD"

// Change is one difference between two snapshots.
type Change struct {
	Path string `json:"path"`           // the file; "HEAD" for a KindHead change
	Kind string `json:"kind"`           // KindAdded, KindRemoved, KindModified or KindHead
	Want string `json:"want,omitempty"` // KindHead: the expected commit id ("" for none)
	Got  string `json:"got,omitempty"`  // KindHead: the current commit id ("" for none)
}

// Compare lists how got differs from want: a KindHead change first when
// the heads differ, then one change per differing path in path order. It
// returns nil when they are equal. A nil snapshot counts as empty;
// manifests that are not sorted are compared as if they were. Provider and
// Root are not compared.
func Compare(want, got *Snapshot) []Change {
	var changes []Change
	if wh, gh := head(want), head(got); wh != gh {
		changes = append(changes, Change{Path: headPath, Kind: KindHead, Want: wh, Got: gh})
	}
	w, g := sortedManifest(want), sortedManifest(got)
	i, j := 0, 0
	for i < len(w) || j < len(g) {
		switch {
		case j == len(g) || (i < len(w) && w[i].Path < g[j].Path):
			changes = append(changes, Change{Path: w[i].Path, Kind: KindRemoved})
			i++
		case i == len(w) || g[j].Path < w[i].Path:
			changes = append(changes, Change{Path: g[j].Path, Kind: KindAdded})
			j++
		default:
			if w[i] != g[j] {
				changes = append(changes, Change{Path: w[i].Path, Kind: KindModified})
			}
			i++
			j++
		}
	}
	return changes
}

// Verify takes a new snapshot of want.Root with want's provider and
// compares it with want. It returns nil when nothing changed (always for
// provider "none"), a *DriftError (ErrDrift, WORKSPACE_DRIFT) listing the
// changes, an error wrapping ErrInvalidSnapshot when want itself is not
// valid, or Take's error when the workspace cannot be snapshotted.
func Verify(ctx context.Context, want *Snapshot, o Options) error {
	if err := validate(want); err != nil {
		return err
	}
	if want.Provider == ProviderNone {
		return nil
	}
	got, err := Take(ctx, want.Root, want.Provider, o)
	if err != nil {
		return fmt.Errorf("workspace: verify: %w", err)
	}
	if changes := Compare(want, got); len(changes) > 0 {
		return &DriftError{Root: want.Root, Changes: changes}
	}
	return nil
}

func head(s *Snapshot) string {
	if s == nil {
		return ""
	}
	return s.Head
}

func sortedManifest(s *Snapshot) []Entry {
	if s == nil {
		return nil
	}
	m := s.Manifest
	if !slices.IsSortedFunc(m, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) }) {
		m = slices.Clone(m)
		sortEntries(m)
	}
	return m
}
