package launch

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/plugin/confine"
	"github.com/obversa/obversa/plugin/pluginhost"
)

// Options configures Start.
type Options struct {
	// StorageDir holds the plugin cache; every plugin is executed from its
	// entry there, never from its source path.
	StorageDir string
	// Fresh says that this process has just written and verified the
	// cache entries (the pre-run check, through CheckSource), so they are
	// not hashed again: a binary is hashed once per run start (docs/architecture.md#performance-budget).
	// false = each entry is re-verified before it is executed (a worker):
	// hashed, unless it shows the stamp in Stamps.
	Fresh bool
	// Stamps are, by digest, the stamps cache entries showed while the
	// host read all their bytes and found them pinned (Source.Stamp,
	// OpenCached): an entry that still shows its stamp is executed without
	// being hashed again (docs/decisions.md, "A verified cache entry is not
	// hashed twice"). nil hashes every entry.
	Stamps map[string]plugin.FileStamp
	// Redact, when set, redacts known secrets from plugin stderr quoted
	// in start errors.
	Redact func(string) string
	// Logger receives the plugins' stderr logs; nil discards.
	Logger hclog.Logger
	// HealthTimeout bounds each health check; default 5 s.
	HealthTimeout time.Duration
	// GreetTimeout bounds each plugin's Describe and Configure calls,
	// each; default DefaultGreetTimeout.
	GreetTimeout time.Duration
	// Supervised says the plugins are a run worker's: the watchdog stops
	// whatever they start (plugin.LaunchConfig.Supervised), so closing
	// them skips the scan for each launch's marker. false = closing a
	// plugin finds and stops its descendants itself (the checks made
	// outside a run: validate, the pre-run check).
	Supervised bool
	// Run, when set, confines every plugin whose plan has a confine block
	// (docs/confinement.md) in this run's directories; nil launches
	// every plugin unconfined.
	Run *Run
}

// Set is the launched plugins of one process, by plugin name.
type Set struct {
	clients  map[string]*plugin.Client
	engines  map[string]plugin.Engine
	bindings map[string]plugin.NodeBinding
	policies map[string]plugin.Policy
	descs    map[string]*plugin.Description
	// configDiags are the warnings Configure answered, by plugin name.
	configDiags map[string][]plugin.Diagnostic
	// confined holds each confined plugin's confinement, by name.
	confined map[string]*confine.Prepared
	watch    memoryWatch
}

// Start launches, health-checks, describes and configures every plugin of
// the plan, all at once: a launch is mostly waiting (process start, the
// handshake's key generation on both sides), so plugins started side by
// side cost about one launch. On any failure every plugin started is
// closed and the error is the first one in plan order, naming the plugin:
// a digest mismatch (plugin.DigestMismatchError), a changed cache entry
// (ErrPluginChanged), a failed handshake or health check, a missing type
// (ErrType) or refused configuration (a *ConfigError, matching ErrConfig,
// with the plugin's diagnostics).
func Start(ctx context.Context, plugins []plan.PluginPlan, o Options) (*Set, error) {
	s, errs := startAll(ctx, plugins, o)
	for _, err := range errs {
		if err != nil {
			// What a failed plugin left running is part of its failure.
			return nil, errors.Join(err, s.Close())
		}
	}
	return s, nil
}

// StartEach launches every plugin of the plan as Start does, but a plugin
// that does not start leaves the others running: it returns the set of
// those that started and, by plugin name, why each other one did not (the
// error names the plugin, as Start's). It returns an error, with every
// plugin closed, only when ctx ended or a cache entry no longer holds its
// pinned bytes (ErrPluginChanged): no later start can mend that.
func StartEach(ctx context.Context, plugins []plan.PluginPlan, o Options) (*Set, map[string]error, error) {
	s, errs := startAll(ctx, plugins, o)
	failed := map[string]error{}
	for i, err := range errs {
		switch {
		case err == nil:
		case ctx.Err() != nil:
			_ = s.Close()
			return nil, nil, ctx.Err()
		case errors.Is(err, ErrPluginChanged):
			_ = s.Close()
			return nil, nil, err
		default:
			s.drop(plugins[i].Name)
			failed[plugins[i].Name] = err
		}
	}
	return s, failed, nil
}

// startAll starts every plugin side by side and returns the set of those
// whose client started (a client whose later step failed included, for
// the caller to close) and each plugin's error, in plan order.
func startAll(ctx context.Context, plugins []plan.PluginPlan, o Options) (*Set, []error) {
	s := &Set{clients: map[string]*plugin.Client{}, engines: map[string]plugin.Engine{},
		bindings: map[string]plugin.NodeBinding{}, policies: map[string]plugin.Policy{}, descs: map[string]*plugin.Description{},
		configDiags: map[string][]plugin.Diagnostic{}, confined: map[string]*confine.Prepared{},
		watch: memoryWatch{seen: map[string]uint64{}}}
	results := make([]*started, len(plugins))
	errs := make([]error, len(plugins))
	var wg sync.WaitGroup
	for i, p := range plugins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = startOne(ctx, p, o)
		}()
	}
	wg.Wait()
	for i, p := range plugins {
		if r := results[i]; r != nil {
			s.add(p, r)
		}
	}
	return s, errs
}

// drop closes a plugin that did not start and forgets it.
func (s *Set) drop(name string) {
	if c := s.clients[name]; c != nil {
		// Close logs what it could not stop.
		_ = c.Close()
	}
	delete(s.clients, name)
	delete(s.engines, name)
	delete(s.bindings, name)
	delete(s.policies, name)
	delete(s.descs, name)
	delete(s.configDiags, name)
}

// started is one launched plugin and what it answered.
type started struct {
	client  *plugin.Client
	engine  plugin.Engine
	binding plugin.NodeBinding
	policy  plugin.Policy
	desc    *plugin.Description
	diags   []plugin.Diagnostic
	// prep is the plugin's confinement; nil when unconfined.
	prep *confine.Prepared
}

func (s *Set) add(p plan.PluginPlan, r *started) {
	if r.prep != nil {
		s.confined[p.Name] = r.prep
	}
	if r.client == nil {
		return
	}
	s.clients[p.Name] = r.client
	switch {
	case r.engine != nil:
		s.engines[p.Name] = r.engine
	case r.policy != nil:
		s.policies[p.Name] = r.policy
	case r.binding != nil:
		s.bindings[p.Name] = r.binding
	}
	if r.desc != nil {
		s.descs[p.Name] = r.desc
	}
	if len(r.diags) > 0 {
		s.configDiags[p.Name] = r.diags
	}
}

// startOne launches one plugin. When the client started but a later step
// failed, it returns both the client (for Start to close) and the error.
func startOne(ctx context.Context, p plan.PluginPlan, o Options) (*started, error) {
	logger := o.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	path := CachePath(o.StorageDir, p.SHA256)
	exe, err := openEntry(p, o, path, logger)
	if err != nil {
		return nil, err
	}
	if exe != nil {
		// The child holds its own copy once started.
		defer exe.Close()
	}
	env := Env(p.Env, p.PassEnv...)
	r := &started{}
	if o.Run != nil && p.Confine != nil {
		prep, tmp, err := prepareConfinement(p, o)
		if err != nil {
			return nil, err
		}
		r.prep = prep
		if _, set := p.Env["TMPDIR"]; !set {
			env = append(env, "TMPDIR="+tmp)
		}
		for _, m := range prep.Missing {
			logger.Warn("confinement not enforced", "plugin", p.Name, "missing", m)
		}
	}
	c, err := pluginhost.Launch(ctx, plugin.LaunchConfig{
		Name: p.Name, Type: plugin.Type(p.Type), Path: path, Source: p.Source, SHA256: p.SHA256, Verified: true, File: exe,
		Args: p.Args, Env: env, Logger: logger, Redact: o.Redact, Confine: r.prep, Supervised: o.Supervised,
		GroupTag: GroupTag(os.Getenv(OwnerEnv)), StartTimeout: p.StartTimeout(),
	})
	if err != nil {
		// The plugin's cgroup goes with the failed start (Start closes r).
		return r, err
	}
	r.client = c
	return r, r.greet(ctx, p, o)
}

// openEntry opens p's cache entry at path to execute it, verified
// (OpenCached) unless o.Fresh: an entry still showing the stamp o.Stamps
// holds for its digest is not hashed again. It returns nil for o.Fresh,
// where the entry is executed by its path; the caller closes the file.
// Errors are OpenCached's.
func openEntry(p plan.PluginPlan, o Options, path string, logger hclog.Logger) (*os.File, error) {
	if o.Fresh {
		return nil, nil
	}
	var stamp *plugin.FileStamp
	if s, ok := o.Stamps[p.SHA256]; ok {
		stamp = &s
	}
	f, vouch, err := OpenCached(p.Name, path, p.SHA256, stamp)
	if err != nil {
		return nil, err
	}
	if stamp != nil && vouch == stamp {
		logger.Named(p.Name).Debug("cached binary unchanged since the host read it; not hashed again", "path", path)
	}
	return f, nil
}

// DefaultGreetTimeout bounds a plugin's Describe and Configure, each,
// when Options.GreetTimeout is 0. Both answer from what the plugin has
// at hand (docs/writing-plugins.md); one that does not answer in this
// time is refused rather than waited for without end.
const DefaultGreetTimeout = 30 * time.Second

// Engines returns the engine plugins by name.
func (s *Set) Engines() map[string]plugin.Engine { return s.engines }

// Bindings returns the node plugins by name.
func (s *Set) Bindings() map[string]plugin.NodeBinding { return s.bindings }

// ConfigDiagnostics returns, by plugin name, the warnings each plugin's
// Configure answered (a plugin that answered none has no entry).
func (s *Set) ConfigDiagnostics() map[string][]plugin.Diagnostic { return s.configDiags }

// Policies returns the policy plugins by name.
func (s *Set) Policies() map[string]plugin.Policy { return s.policies }

// Descriptions returns each plugin's Describe answer by name.
func (s *Set) Descriptions() map[string]*plugin.Description { return s.descs }

// Clients returns the launched clients by name.
func (s *Set) Clients() map[string]*plugin.Client { return s.clients }

// Close stops every plugin process and whatever each started (side by
// side, so each one's stop grace runs at once; plugin.Client.Close) and
// removes their cgroups. It returns the *plugin.LeftRunningError of each
// plugin whose processes could not all be stopped, joined (errors.Join),
// and any cgroup that could not be removed; nil when nothing is left.
func (s *Set) Close() error {
	errs := make([]error, 0, len(s.clients)+len(s.confined))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range s.clients {
		wg.Go(func() {
			if err := c.Close(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, prep := range s.confined {
		if err := prep.Release(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
