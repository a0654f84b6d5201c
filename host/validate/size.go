package validate

import (
	"fmt"
	"os"
	"strings"
	"time"

	hclv2 "github.com/hashicorp/hcl/v2"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/store"
)

// sizingRunID stands in for the run id `obversa run` makes
// (20260102T030405-abcdef): what is measured holds it as often as the
// real one, at the same length.
const sizingRunID = "20060102T150405-000000"

// checkRecordable reports a run file whose definition and plan — the
// record's first event, graph:run-started, holding every node's prompt
// and input — are larger than storage.max_batch_bytes: `obversa run`
// would refuse to record it (STORAGE_LIMIT_EXCEEDED) after checking
// everything else. The event is measured as run records it, its line's
// envelope included (store.FirstEventBytes), with each plugin's digest
// the size of a real one. The error is at the node whose prompt and
// input are the largest, the likeliest to shorten.
func checkRecordable(rf *hcl.RunFile) hclv2.Diagnostics {
	digests := make(map[string]string, len(rf.Plugins))
	for _, pl := range rf.Plugins {
		digests[pl.Name] = strings.Repeat("0", 64)
	}
	def, p, err := plan.Compile(rf, sizingRunID, digests)
	if err != nil {
		return nil // run reports it in its own words
	}
	rs, err := plan.NewRunStarted(rf.Filename, def, p, time.Now())
	if err != nil {
		return nil
	}
	b, err := plan.Canonical(rs)
	if err != nil {
		return nil
	}
	size := store.FirstEventBytes(graph.EventRunStarted, b)
	if size <= rf.Storage.MaxBatchBytes {
		return nil
	}
	at := hcl.Range{Filename: rf.Filename, Line: 1, Column: 1}
	largest := -1
	for _, n := range rf.Graph.Nodes {
		if size := len(n.Prompt) + len(n.Input); size > largest {
			largest, at = size, n.Range
		}
	}
	rng := sourceRange(at)
	return errorAt(rng, "Run definition too large to record",
		fmt.Sprintf("The run's definition and plan (every node with its prompt and input, the lanes and plugins) are %d bytes, more than storage.max_batch_bytes = %d, so `obversa run` would refuse to start it (STORAGE_LIMIT_EXCEEDED). Raise max_batch_bytes in the storage block (docs/run-file.md), or shorten the largest prompts and inputs (this node's are the largest: %d bytes).",
			size, rf.Storage.MaxBatchBytes, largest))
}

// sourceRange is at (a line and column) as a range of the run file, with
// the byte offset hcl's diagnostic writer needs to show the source line:
// read from the file, the start of the line; the file's start when it
// cannot be read.
func sourceRange(at hcl.Range) hclv2.Range {
	pos := hclv2.Pos{Line: at.Line, Column: at.Column}
	if src, err := os.ReadFile(at.Filename); err == nil {
		line := 1
		for i := 0; i < len(src) && line < at.Line; i++ {
			if src[i] == '\n' {
				line++
				pos.Byte = i + 1
			}
		}
	}
	return hclv2.Range{Filename: at.Filename, Start: pos, End: pos}
}
