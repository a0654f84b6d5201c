package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
)

// The DBOS side of the comparison: the workloads of the Obversa
// benchmarks BenchmarkChain200 and BenchmarkDAG1000FanOut32
// (cmd/obversa/bench_test.go) as DBOS Transact workflows whose nodes are
// checkpointed steps (dbos.RunAsStep, dbos.Go). A step does nothing, so
// what is timed is DBOS's own bookkeeping: per step, DBOS v1.8 reads the
// workflow's status and any earlier checkpoint, then commits the step's
// checkpoint in a transaction of its own (one durable commit).

// noop is every node's work.
func noop(context.Context) (string, error) { return "ok", nil }

// chainWF runs n steps one after another: node i needs node i-1.
func chainWF(ctx dbos.Context, n int) (int, error) {
	for i := 0; i < n; i++ {
		if _, err := dbos.RunAsStep(ctx, noop, dbos.WithStepName("node")); err != nil {
			return i, err
		}
	}
	return n, nil
}

// treeIn is a tree of Nodes steps in which node i > 0 needs node
// (i-1)/FanOut, at most Concurrency of them in flight.
type treeIn struct {
	Nodes       int `json:"nodes"`
	FanOut      int `json:"fan_out"`
	Concurrency int `json:"concurrency"`
}

// treeWF runs the tree as BenchmarkDAG1000FanOut32 does: a node starts
// once its parent completed and a slot is free. Nodes start in index
// order (dbos.Go must be called from the workflow's goroutine and numbers
// steps in call order, so a replay starts them in the same order); a
// completion of any node in flight frees its slot.
func treeWF(ctx dbos.Context, in treeIn) (int, error) {
	done := make([]bool, in.Nodes)
	finished := make(chan int, in.Nodes)
	var firstErr error
	inFlight, completed, next := 0, 0, 0
	for completed < in.Nodes {
		for next < in.Nodes && inFlight < in.Concurrency && (next == 0 || done[(next-1)/in.FanOut]) {
			ch, err := dbos.Go(ctx, noop, dbos.WithStepName("node"))
			if err != nil {
				return completed, err
			}
			go func(i int, ch <-chan dbos.StepOutcome[string]) {
				o := <-ch
				if o.Err != nil {
					i = -1 - i
				}
				finished <- i
			}(next, ch)
			next++
			inFlight++
		}
		i := <-finished
		inFlight--
		if i < 0 {
			if firstErr == nil {
				firstErr = fmt.Errorf("node %d failed", -1-i)
			}
			i = -1 - i
		}
		done[i] = true
		completed++
	}
	return completed, firstErr
}

// runDBOS is `peers dbos`: it launches DBOS on the database -db names,
// runs each workload -reps times after one untimed warm-up, checks that
// every step was recorded, and prints one line per workload in the form
// of `go test -bench` output.
func runDBOS(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("dbos", flag.ContinueOnError)
	url := fs.String("db", "", "PostgreSQL URL of DBOS's system database (required)")
	reps := fs.Int("reps", 3, "timed repetitions per workload")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *url == "" {
		return fmt.Errorf("dbos: -db is required (a postgres:// URL)")
	}
	ctx, err := dbos.NewContext(context.Background(), dbos.Config{
		DatabaseURL:        *url,
		AppName:            "obversa-peers",
		ApplicationVersion: "peers-v1",
		Logger:             slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return fmt.Errorf("dbos: NewContext: %w", err)
	}
	dbos.RegisterWorkflow(ctx, chainWF, dbos.WithWorkflowName("chain"))
	dbos.RegisterWorkflow(ctx, treeWF, dbos.WithWorkflowName("tree"))
	if err := dbos.Launch(ctx); err != nil {
		return fmt.Errorf("dbos: Launch: %w", err)
	}
	defer dbos.Shutdown(ctx, 30*time.Second)

	workloads := []struct {
		name  string
		nodes int
		run   func() (dbos.WorkflowHandle[int], error)
	}{
		{"DBOSChain200", 200, func() (dbos.WorkflowHandle[int], error) { return dbos.RunWorkflow(ctx, chainWF, 200) }},
		{"DBOSDAG1000FanOut32", 1000, func() (dbos.WorkflowHandle[int], error) {
			return dbos.RunWorkflow(ctx, treeWF, treeIn{Nodes: 1000, FanOut: 32, Concurrency: 32})
		}},
	}
	for _, w := range workloads {
		var total time.Duration
		for i := 0; i <= *reps; i++ {
			start := time.Now()
			h, err := w.run()
			if err != nil {
				return fmt.Errorf("dbos: %s: %w", w.name, err)
			}
			n, err := h.GetResult()
			elapsed := time.Since(start)
			if err != nil {
				return fmt.Errorf("dbos: %s: %w", w.name, err)
			}
			steps, err := dbos.GetWorkflowSteps(ctx, h.GetWorkflowID())
			if err != nil {
				return fmt.Errorf("dbos: %s: reading the steps back: %w", w.name, err)
			}
			if n != w.nodes || len(steps) != w.nodes {
				return fmt.Errorf("dbos: %s: %d nodes ran and %d steps were recorded, want %d", w.name, n, len(steps), w.nodes)
			}
			if i > 0 { // the first is the warm-up
				total += elapsed
			}
		}
		per := float64(total.Microseconds()) / 1000 / float64(*reps*w.nodes)
		fmt.Fprintf(out, "Benchmark%s \t%d\t%.3f ms/node\n", w.name, *reps, per)
	}
	return nil
}
