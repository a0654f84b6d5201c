package executor

import "github.com/obversa/obversa/host/graph"

// Waiting returns the recorded pause when the record ends with
// graph:run-waiting (nothing happened since), else nil.
func (x *Executor) Waiting() *graph.RunResult { return x.waiting }
