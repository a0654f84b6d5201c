package executor

import (
	"context"
	"strings"
	"syscall"
	"testing"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
	"github.com/obversa/obversa/store/simfs"
)

// TestFaultOf: what the record's failures become on a simulated file
// system — a full device on an append or an artifact is STORAGE_FULL
// naming the file, another I/O error RUN_STORAGE, a missing artifact a
// fault of the record; the policy's refusals are the node's, not faults.
func TestFaultOf(t *testing.T) {
	ctx := context.Background()
	event := store.NewEvent{Type: "test:event", Data: map[string]int{"n": 1}}
	tests := []struct {
		name   string
		fault  simfs.Fault
		policy store.Policy
		op     func(r store.Record) error
		code   string // "" when the error is not a fault
		path   string
	}{
		{name: "append on a full device", fault: simfs.Fault{Op: simfs.OpWrite, Path: "events.jsonl", Err: syscall.ENOSPC, Times: -1},
			op: func(r store.Record) error { _, err := r.Append(ctx, 0, event); return err }, code: runstate.CodeStorageFull, path: "events.jsonl"},
		{name: "append over quota", fault: simfs.Fault{Op: simfs.OpWrite, Path: "events.jsonl", Err: syscall.EDQUOT, Times: -1},
			op: func(r store.Record) error { _, err := r.Append(ctx, 0, event); return err }, code: runstate.CodeStorageFull, path: "events.jsonl"},
		{name: "fdatasync fails", fault: simfs.Fault{Op: simfs.OpDatasync, Path: "events.jsonl", Err: syscall.EIO},
			op: func(r store.Record) error { _, err := r.Append(ctx, 0, event); return err }, code: runstate.CodeRunStorage, path: "events.jsonl"},
		{name: "artifact on a full device", fault: simfs.Fault{Op: simfs.OpWrite, Err: syscall.ENOSPC},
			op: func(r store.Record) error {
				_, err := r.PutArtifact(ctx, []byte(strings.Repeat("a", 1000)), "text/plain", "node-result")
				return err
			}, code: runstate.CodeStorageFull, path: "artifacts"},
		{name: "artifact over its limit", policy: store.Policy{MaxArtifactBytes: 10},
			op: func(r store.Record) error {
				_, err := r.PutArtifact(ctx, []byte(strings.Repeat("a", 1000)), "text/plain", "node-result")
				return err
			}},
		{name: "missing artifact",
			op: func(r store.Record) error {
				_, err := r.ReadArtifact(ctx, store.ArtifactRef{Digest: "sha256:" + strings.Repeat("0", 64), Size: 1})
				return err
			}, code: "missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := simfs.New()
			st, err := store.Open("/storage", "ns", store.WithFS(fsys))
			if err != nil {
				t.Fatal(err)
			}
			r, err := st.CreateRun(ctx, "r", tt.policy)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			own, err := r.Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer own.Release()
			if tt.fault.Op != "" {
				fsys.Inject(tt.fault)
			}
			opErr := tt.op(r)
			if opErr == nil {
				t.Fatal("the operation did not fail")
			}
			f := FaultOf(opErr)
			switch tt.code {
			case "":
				if isFault(opErr) || f != nil {
					t.Errorf("%v is taken for a fault of the record (%+v)", opErr, f)
				}
				return
			case "missing":
				if !isFault(opErr) || f != nil {
					t.Errorf("a missing artifact: isFault %v, FaultOf %+v", isFault(opErr), f)
				}
				return
			}
			if f == nil || f.Code != tt.code || !strings.Contains(f.Path, tt.path) || !strings.Contains(f.Message, f.Path) || f.Unwrap() == nil {
				t.Fatalf("FaultOf(%v) = %+v, want code %s naming %s", opErr, f, tt.code, tt.path)
			}
			if res := f.Result("r"); res.Kind != runstate.KindPaused || res.Code != tt.code || res.Output.Path != f.Path {
				t.Errorf("result %+v", res)
			}
		})
	}
}

// TestArtifactFault: the fault of artifacts the run needs names every
// digest and node, and is ARTIFACT_NOT_FOUND when one is missing.
func TestArtifactFault(t *testing.T) {
	f := artifactFault([]runstate.ArtifactProblem{
		{Digest: "sha256:bb", Node: "b", Problem: "ARTIFACT_INTEGRITY: sha256:bb: stored bytes do not hash to the digest"},
		{Digest: "sha256:aa", Node: "a", Problem: "ARTIFACT_NOT_FOUND: sha256:aa"},
	}, store.ErrArtifactIntegrity)
	if f.Code != runstate.CodeArtifactNotFound || len(f.Artifacts) != 2 || f.Artifacts[0].Digest != "sha256:aa" {
		t.Fatalf("fault %+v", f)
	}
	for _, want := range []string{`sha256:aa (result of "a")`, `sha256:bb (result of "b")`, "obversa resume"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("message %q lacks %q", f.Message, want)
		}
	}
}
