package store_test

import (
	"context"
	"fmt"
	"os"

	"github.com/obversa/obversa/store"
)

func Example() {
	root, _ := os.MkdirTemp("", "obversa-example-")
	defer os.RemoveAll(root)
	ctx := context.Background()

	st, _ := store.Open(root, "default")
	run, err := st.CreateRun(ctx, "run-1", store.Policy{MaxEventPayloadBytes: 65536})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer run.Close()
	// Only the run's owner appends.
	_, err = run.Append(ctx, 0, store.NewEvent{Type: "graph:node-dispatched"})
	fmt.Println(store.Code(err))
	own, err := run.Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer own.Release()

	// One batch: durable (written once, fdatasync'd) before Append returns.
	rev, _ := run.Append(ctx, 0,
		store.NewEvent{ID: "dispatch-draft-1", Type: "graph:node-dispatched", Data: map[string]any{"node": "draft", "position": "dag/draft/1"}},
		store.NewEvent{ID: "start-draft-1", Type: "graph:node-attempt-started", Data: map[string]any{"node": "draft", "retry_safe": false}})
	fmt.Println("committed through rev", rev)

	// A writer that lost track of the stream is told so.
	_, err = run.Append(ctx, 0, store.NewEvent{Type: "graph:node-completed"})
	fmt.Println(store.Code(err))

	_ = run.Read(ctx, 1, func(e store.Event) error {
		fmt.Println(e.Rev, e.Type, string(e.Data))
		return nil
	})
	// Output:
	// NOT_OWNER
	// committed through rev 2
	// REVISION_CONFLICT
	// 1 graph:node-dispatched {"node":"draft","position":"dag/draft/1"}
	// 2 graph:node-attempt-started {"node":"draft","retry_safe":false}
}

func ExampleRun_PutArtifact() {
	root, _ := os.MkdirTemp("", "obversa-example-")
	defer os.RemoveAll(root)
	ctx := context.Background()
	st, _ := store.Open(root, "default")
	run, _ := st.CreateRun(ctx, "run-1", store.Policy{KnownSecrets: []string{"sk-live-123456"}})
	defer run.Close()
	own, _ := run.Lock(ctx)
	defer own.Release()

	// Free text is redacted before hashing …
	ref, _ := run.PutArtifact(ctx, []byte("calling API with key sk-live-123456\n"), "text/plain", "engine-log")
	text, _ := run.ReadArtifact(ctx, ref)
	fmt.Printf("%s%d bytes\n", text, ref.Size)

	// … structured data holding a secret is refused.
	_, err := run.PutArtifact(ctx, []byte(`{"env":{"KEY":"sk-live-123456"}}`), "application/json", "engine-result")
	fmt.Println(err)
	// Output:
	// calling API with key [REDACTED]
	// 32 bytes
	// KNOWN_SECRET: application/json artifact (purpose "engine-result"): field $.env.KEY contains a known secret (value withheld)
}

func ExampleStore_Verify() {
	root, _ := os.MkdirTemp("", "obversa-example-")
	defer os.RemoveAll(root)
	ctx := context.Background()
	st, _ := store.Open(root, "default")
	run, _ := st.CreateRun(ctx, "run-1", store.Policy{})
	own, _ := run.Lock(ctx)
	ref, _ := run.PutArtifact(ctx, []byte("result"), "text/plain", "result")
	run.Append(ctx, 0, store.NewEvent{Type: "graph:node-completed", Data: map[string]any{"result": ref}})
	own.Release()
	run.Close()

	rep, err := st.Verify(ctx, "run-1")
	fmt.Println(rep.Events, rep.Artifacts, len(rep.Faults), err)

	// Damage the artifact: Verify names it and the event that references it.
	os.WriteFile(run.Dir()+"/artifacts/sha256/"+ref.Digest[len("sha256:"):], []byte("RESULT"), 0o644)
	rep, err = st.Verify(ctx, "run-1")
	fmt.Println(store.Code(err), rep.Faults[0].Rev, rep.Faults[0].Problem)
	// Output:
	// 1 1 0 <nil>
	// ARTIFACT_INTEGRITY 1 blob does not hash to its digest
}
