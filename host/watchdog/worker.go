package watchdog

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/host/executor"
	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/store"
)

// Work is the body of `obversa worker`: it opens the run at runDir, launches
// the plan's plugins from the pinned cache, and runs the executor until the
// run records a result. It stops (cancelling in-flight attempts, recording
// nothing for them) on SIGTERM, SIGINT, or EOF on stdin — the watchdog's
// end of the pipe closing means the watchdog is gone.
func Work(ctx context.Context, runDir string, stdin io.Reader) (*graph.RunResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sig)
	go func() {
		select {
		case <-sig:
			cancel()
		case <-ctx.Done():
		}
	}()
	if stdin != nil {
		go func() {
			_, _ = io.Copy(io.Discard, stdin)
			cancel()
		}()
	}

	probe, err := store.OpenRunDir(ctx, runDir, store.Policy{})
	if err != nil {
		return nil, err
	}
	rs, err := executor.LoadRunStarted(ctx, probe)
	probe.Close()
	if err != nil {
		return nil, err
	}
	run, err := store.OpenRunDir(ctx, runDir, Policy(rs.Plan))
	if err != nil {
		return nil, err
	}
	defer run.Close()

	logf, err := os.OpenFile(filepath.Join(runDir, "plugins.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	logger := hclog.New(&hclog.LoggerOptions{Name: "plugin", Output: logf, Level: hclog.Debug, JSONFormat: true})

	opts := executor.Options{Run: run, Logger: logger}
	if f := faultFromEnv(); f != nil {
		opts.Fault = f
	}
	x, err := executor.New(ctx, opts)
	if err != nil {
		return nil, err
	}
	if res := x.Finished(); res != nil {
		return res, nil
	}
	set, err := launch.Start(ctx, rs.Plan.Plugins, launch.Options{StorageDir: rs.Plan.Storage.Directory, Logger: logger})
	if err != nil {
		return nil, err
	}
	defer set.Close()
	x.SetPlugins(set.Engines(), set.Bindings())
	res, err := x.Execute(ctx)
	if errors.Is(err, context.Canceled) {
		return nil, err
	}
	return res, err
}
