package watchdog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/workspace"
	"github.com/obversa/obversa/internal/proc"
	"github.com/obversa/obversa/store"
)

// Workspace outcome codes (docs/cli.md#output-and-exit-status).
const (
	CodeWorkspaceLease         = "WORKSPACE_LEASE"
	CodeWorkspaceDrift         = "WORKSPACE_DRIFT"
	CodeWorkspaceAnchorMissing = "WORKSPACE_ANCHOR_MISSING"
	CodeWorkspaceAnchorInvalid = "WORKSPACE_ANCHOR_INVALID"
)

var (
	// ErrAnchorMissing is returned by Resume when a paused run's
	// runner-pause-anchor is absent from the record or the artifacts.
	ErrAnchorMissing = errors.New(CodeWorkspaceAnchorMissing)
	// ErrAnchorInvalid is returned by Resume when the anchor cannot be
	// read back as a snapshot (integrity or format).
	ErrAnchorInvalid = errors.New(CodeWorkspaceAnchorInvalid)
)

// guard holds a run's workspace: its lease while a worker runs, and the
// snapshots taken around crashes and pauses. The lease is held for every
// provider, so two runs never work in one workspace at once; a "none"
// provider takes no snapshots.
type guard struct {
	root, provider string
	exclude        []string
	holder         string
	lease          *workspace.Lease
}

// newGuard returns the workspace guard of a run whose processes carry
// marker. The lease holder record is "<run id> <owner marker>", so a later
// run can find the processes the holder may have left behind.
func newGuard(p *plan.Plan, marker string) *guard {
	return &guard{root: p.Workspace.Root, provider: p.Workspace.Provider, exclude: []string{p.Storage.Directory},
		holder: p.RunID + " " + marker}
}

func (g *guard) active() bool { return g.provider != "" && g.provider != workspace.ProviderNone }

// acquire takes the workspace lease (workspace.ErrLeaseHeld when another
// run holds it).
func (g *guard) acquire() error {
	if g.lease != nil {
		return nil
	}
	prev, hadPrev, _ := workspace.ReadLease(g.root)
	l, err := workspace.AcquireLease(g.root, g.holder)
	if err != nil {
		return err
	}
	// The kernel frees the flock when the holder's watchdog and worker
	// die, but the processes of that run may still write here: the lease
	// is only free once none carrying its marker survives.
	if f := strings.Fields(prev.Holder); hadPrev && len(f) == 2 && f[1] != strings.Fields(g.holder)[1] {
		if left, err := proc.Marked(launch.OwnerEnv+"="+f[1], map[int]bool{os.Getpid(): true}); err == nil && len(left) > 0 {
			_ = l.Release()
			return fmt.Errorf("%w: run %s left %d processes in workspace %s (first pid %d); stop them or let `obversa resume` of that run clean up",
				workspace.ErrLeaseHeld, f[0], len(left), g.root, left[0].PID)
		}
	}
	g.lease = l
	return nil
}

func (g *guard) release() {
	if g.lease != nil {
		_ = g.lease.Release()
		g.lease = nil
	}
}

// save takes a snapshot, stores it as an artifact and records it as typ
// (runstate.EventWorkspaceSnapshot or runstate.EventPauseAnchor).
func (g *guard) save(ctx context.Context, s *supervisor, typ string) (*workspace.Snapshot, error) {
	if !g.active() {
		return nil, nil
	}
	snap, err := workspace.Take(ctx, g.root, g.provider, workspace.Options{Exclude: g.exclude})
	if err != nil {
		return nil, err
	}
	return snap, s.recordSnapshot(ctx, typ, snap)
}

// recordSnapshot stores a snapshot as an artifact and records it as typ.
// When the record's policy refuses the artifact (a workspace of many
// files can pass max_artifact_bytes) or the device has no room for it,
// the snapshot's digest is recorded
// alone: the pause or crash must be recorded whatever the workspace's
// size, and a digest still tells a resume whether the workspace changed.
func (s *supervisor) recordSnapshot(ctx context.Context, typ string, snap *workspace.Snapshot) error {
	b, err := workspace.Encode(snap)
	if err != nil {
		return err
	}
	data := runstate.SnapshotData{Provider: snap.Provider, Digest: snap.Digest, Files: snap.Files, Head: snap.Head}
	ref, err := s.run.PutArtifact(ctx, b, "application/json", "runner-pause-anchor")
	switch {
	case errors.Is(err, store.ErrStorageLimitExceeded), errors.Is(err, store.ErrKnownSecret), errors.Is(err, store.ErrStorageFull):
		s.o.Logger.Warn("workspace snapshot kept as its digest only", "error", err)
	case err != nil:
		return err
	default:
		data.Anchor = &ref
	}
	return s.record(ctx, typ, data)
}

// verify checks the workspace against a snapshot (*workspace.DriftError).
func (g *guard) verify(ctx context.Context, snap *workspace.Snapshot) error {
	if !g.active() || snap == nil {
		return nil
	}
	o := workspace.Options{Exclude: g.exclude}
	if snap.Manifest != nil || snap.Files == 0 {
		return workspace.Verify(ctx, snap, o)
	}
	// Kept as its digest alone: a drift names the root, as which files
	// changed is not known.
	got, err := workspace.Take(ctx, g.root, snap.Provider, o)
	if err != nil {
		return err
	}
	var changes []workspace.Change
	if got.Head != snap.Head {
		changes = append(changes, workspace.Change{Path: "HEAD", Kind: workspace.KindHead, Want: snap.Head, Got: got.Head})
	}
	if got.Digest != snap.Digest {
		changes = append(changes, workspace.Change{Path: ".", Kind: workspace.KindModified})
	}
	if len(changes) > 0 {
		return &workspace.DriftError{Root: got.Root, Changes: changes}
	}
	return nil
}

// lastAnchor reads back the newest snapshot the record holds (a pause
// anchor or a crash snapshot) taken after the last worker started; a
// snapshot recorded by its digest alone comes back without a manifest.
// ErrAnchorMissing when there is none or its artifact is gone;
// ErrAnchorInvalid when it does not decode.
func lastAnchor(ctx context.Context, run store.Record, st *runstate.State) (*workspace.Snapshot, error) {
	last := st.Anchor()
	if last == nil {
		return nil, fmt.Errorf("%w: the record holds no workspace snapshot", ErrAnchorMissing)
	}
	if last.Anchor == nil {
		return &workspace.Snapshot{Provider: last.Provider, Root: st.Plan().Workspace.Root, Digest: last.Digest, Files: last.Files, Head: last.Head}, nil
	}
	b, err := run.ReadArtifact(ctx, *last.Anchor)
	switch {
	case errors.Is(err, store.ErrArtifactNotFound):
		return nil, fmt.Errorf("%w: artifact %s: %v", ErrAnchorMissing, last.Anchor.Digest, err)
	case err != nil:
		return nil, fmt.Errorf("%w: artifact %s: %v", ErrAnchorInvalid, last.Anchor.Digest, err)
	}
	snap, err := workspace.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrAnchorInvalid, err)
	}
	return snap, nil
}

// maxRecordedChanges is how many workspace changes a WORKSPACE_DRIFT
// pause lists in its output.
const maxRecordedChanges = 100

// pause records a pause the watchdog decided (lease busy, drift), with the
// workspace anchor to verify on resume.
func (s *supervisor) pause(ctx context.Context, code, detail string, anchor *workspace.Snapshot, changes []workspace.Change) (*runstate.Result, error) {
	if n := len(changes) - maxRecordedChanges; n > 0 {
		// The event stays small whatever changed; the message counts all.
		changes = changes[:maxRecordedChanges]
		detail += fmt.Sprintf(" (the record lists the first %d changes)", maxRecordedChanges)
	}
	res := runstate.Message(s.plan.RunID, runstate.KindPaused, code, s.message(detail))
	if changes != nil {
		b, err := json.Marshal(changes)
		if err != nil {
			return nil, err
		}
		res.Output.Changes = b
	}
	if err := s.record(ctx, graph.EventRunWaiting, res); err != nil {
		return nil, err
	}
	if anchor != nil {
		if err := s.recordSnapshot(ctx, runstate.EventPauseAnchor, anchor); err != nil {
			return nil, err
		}
	}
	return res, nil
}
