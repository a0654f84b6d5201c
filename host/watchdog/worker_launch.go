package watchdog

// The worker's launches of the run's plugins: begun after the fold, or
// taken over from a first worker's launches before the hand-over
// (early.go), and handed to the executor with their preflight view.

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/host/executor"
	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
)

// takeLaunches returns the launches of the run's plugins and the logger
// of plugins.log (logf): those a first worker launched before the
// hand-over when they were launched from the plan the run recorded (rs),
// else launches begun now from the recorded plan.
func takeLaunches(ctx context.Context, early *earlyLaunch, rs *plan.RunStarted, pol store.Policy, logf io.Writer) (*pluginLaunches, hclog.Logger) {
	var why error
	if early != nil {
		launches, logger, err := early.adopt(rs, logf)
		if err == nil {
			logger.Debug(EarlyLaunchLog)
			return launches, logger
		}
		why = err
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "plugin", Output: logf, Level: hclog.Debug, JSONFormat: true})
	if why != nil {
		logger.Warn("the plugins launched before the hand-over were closed; launching the recorded plan's", "error", why)
	}
	return launchPlugins(ctx, rs.Plan, pol, logger), logger
}

// pluginLaunches is startPlugins running on a goroutine of its own.
type pluginLaunches struct {
	done   chan pluginLaunch
	cancel context.CancelFunc
}

// pluginLaunch is what startPlugins returned.
type pluginLaunch struct {
	set        *launch.Set
	unlaunched map[string]error
	err        error
}

// launchPlugins starts startPlugins and returns at once.
func launchPlugins(ctx context.Context, p *plan.Plan, pol store.Policy, logger hclog.Logger) *pluginLaunches {
	ctx, cancel := context.WithCancel(ctx)
	l := &pluginLaunches{done: make(chan pluginLaunch, 1), cancel: cancel}
	go func() {
		set, unlaunched, err := startPlugins(ctx, p, pol, logger)
		l.done <- pluginLaunch{set, unlaunched, err}
	}()
	return l
}

// wait returns what startPlugins returned, once it has.
func (l *pluginLaunches) wait() (*launch.Set, map[string]error, error) {
	r := <-l.done
	return r.set, r.unlaunched, r.err
}

// abandon ends the launches (a launch's context bounds only its start)
// and closes whatever started, for a worker that returns before it uses
// its plugins.
func (l *pluginLaunches) abandon() {
	l.cancel()
	if set, _, _ := l.wait(); set != nil {
		_ = set.Close()
	}
}

// startPlugins launches the run's plugins from the plugin cache
// (launch.StartEach), an entry that still shows the stamp the watchdog
// handed on (VerifiedEnv) without hashing it again. A plugin that does not
// start is the run's to answer for, not a crash to restart
// (docs/decisions.md, "A plugin that does not start in the worker"): it is
// in unlaunched, and preflight or the executor records it. Errors are
// StartEach's.
func startPlugins(ctx context.Context, p *plan.Plan, pol store.Policy, logger hclog.Logger) (*launch.Set, map[string]error, error) {
	stamps, err := decodeStamps(os.Getenv(VerifiedEnv))
	if err != nil {
		// Without stamps every cache entry is hashed: slower, as safe.
		logger.Warn("the watchdog's stamps of the plugin cache are unreadable; hashing every entry", "error", err)
	}
	return launch.StartEach(ctx, p.Plugins, launch.Options{StorageDir: p.Storage.Directory, Logger: logger, Redact: redactor(pol),
		Run: RunOf(p), Supervised: true, Stamps: stamps})
}

// usePlugins hands the launched plugins to x, with the preflight view of
// them and of those that did not start.
func usePlugins(x *executor.Executor, set *launch.Set, p *plan.Plan, unlaunched map[string]error) {
	x.SetPlugins(set.Engines(), set.Bindings())
	x.SetPolicies(set.Policies())
	x.SetMemoryWatch(set)
	x.SetUnlaunched(unlaunched)
	x.SetProbes(probes(set, p, unlaunched))
}

// probes is the preflight view of the launched engine plugins: the cached
// binary each was launched from, its health check, whether it admits, and
// how to stop it. An engine plugin that did not start fails its health
// check with the cause.
func probes(set *launch.Set, p *plan.Plan, unlaunched map[string]error) map[string]executor.PluginProbe {
	out := map[string]executor.PluginProbe{}
	for name, cause := range unlaunched {
		if pp, ok := p.Plugin(name); ok && pp.Type == string(plugin.TypeEngine) {
			out[name] = executor.PluginProbe{Binary: launch.CachePath(p.Storage.Directory, pp.SHA256),
				Health: func(context.Context) error { return fmt.Errorf("the plugin did not start in the worker: %w", cause) }}
		}
	}
	clients, descs := set.Clients(), set.Descriptions()
	for name := range set.Engines() {
		pp, ok := p.Plugin(name)
		c := clients[name]
		if !ok || c == nil {
			continue
		}
		probe := executor.PluginProbe{Binary: launch.CachePath(p.Storage.Directory, pp.SHA256), Health: c.Health, Stop: func() { _ = c.Close() }}
		if d := descs[name]; d != nil {
			probe.NoAdmit = !d.Capabilities.Admit
		}
		out[name] = probe
	}
	return out
}
