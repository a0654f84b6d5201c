package conformance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/plugin"
)

// verdict is a case's outcome before it is timed.
type verdict struct {
	status Status
	seen   string
}

func pass(format string, args ...any) verdict { return verdict{Pass, fmt.Sprintf(format, args...)} }
func fail(format string, args ...any) verdict { return verdict{Fail, fmt.Sprintf(format, args...)} }
func skip(format string, args ...any) verdict { return verdict{Skip, fmt.Sprintf(format, args...)} }

// Check runs the suite against the plugin binary at binaryPath, launched
// as a run would launch it (digest pinned, go-plugin handshake, automatic
// mTLS, the host's environment allow-list plus opts.Env), and returns the
// report. Each case launches its own plugin process. It returns an error
// only when the check cannot start: invalid opts (ErrOptions) or a binary
// that is missing, not a regular file or not executable (ErrBinary). ctx
// and opts.Timeout (DefaultTimeout) bound the whole check; when either
// ends, the case under way fails and the remaining cases fail without
// running, saying why.
func Check(ctx context.Context, binaryPath string, opts Options) (*Report, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	bin, err := filepath.Abs(binaryPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %v: %w", binaryPath, err, ErrBinary)
	}
	st, err := os.Stat(bin)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%v: %w", err, ErrBinary)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file: %w", bin, ErrBinary)
	case st.Mode().Perm()&0o111 == 0:
		return nil, fmt.Errorf("%s is not executable: %w", bin, ErrBinary)
	}
	// The binary is read once, into a private copy named by its digest;
	// every case executes that copy, never the path given.
	tmp, err := os.MkdirTemp("", "obversa-conformance-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	copied, err := plugin.CopyBinary("conformance", bin, tmp, plugin.CopyOptions{})
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, ErrBinary)
	}
	sha := copied.SHA256
	k := &kit{bin: copied.Path, sha: sha, opts: opts, typ: opts.pluginType(), env: opts.environment(), logger: opts.Logger}
	if k.logger == nil {
		k.logger = hclog.NewNullLogger()
	}
	rep := &Report{Binary: bin, SHA256: sha, Type: string(k.typ), ScenarioControl: "none"}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, opts.timeout())
	defer cancel()
	k.over = func() string { return overReason(parent, ctx, opts.timeout()) }
	failed := map[string]bool{}
	probed := false
	for _, c := range cases {
		if !c.applies(k.typ) {
			continue
		}
		start := time.Now()
		var v verdict
		switch {
		case len(opts.Only) > 0 && !contains(opts.Only, c.Name):
			v = skip("not selected")
		case c.launches && failed["handshake.line"]:
			v = skip("handshake.line failed: the host cannot launch this plugin")
		case c.configured && failed["configure.valid"]:
			v = skip("configure.valid failed: the plugin refuses the configuration under test")
		case ctx.Err() != nil:
			v = fail("not run: %s", k.over())
		default:
			if c.launches && !probed {
				probed = true
				k.probe(ctx)
				rep.Plugin, rep.ScenarioControl = k.pluginName(), k.controlName()
			}
			v = k.runCase(ctx, c)
		}
		if v.status == Fail {
			failed[c.Name] = true
		}
		rep.Results = append(rep.Results, Result{Case: c.Name, Status: v.status, Expected: c.Expected, Seen: v.seen, Duration: time.Since(start)})
	}
	return rep, nil
}

// runCase runs c under the case timeout and turns a panic of the kit
// itself into a failed case rather than a crash.
func (k *kit) runCase(ctx context.Context, c kcase) (v verdict) {
	timeout := k.opts.CaseTimeout
	if timeout <= 0 {
		timeout = DefaultCaseTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			v = fail("the kit itself panicked: %v", r)
		}
	}()
	cctx, rc := withRecordCheck(cctx)
	v = c.run(cctx, k)
	switch {
	case v.status == Pass || cctx.Err() == nil:
	case ctx.Err() != nil:
		v = fail("%s (%s)", v.seen, k.over())
	default:
		v = fail("%s (the case ran out of time: %v)", v.seen, cctx.Err())
	}
	return rc.judge(v)
}

// overReason says why the check's context ctx (made from parent with the
// overall bound d) ended.
func overReason(parent, ctx context.Context, d time.Duration) string {
	if parent.Err() != nil {
		return fmt.Sprintf("the check was stopped: %v", parent.Err())
	}
	return fmt.Sprintf("the check's time bound of %s passed (Options.Timeout; `obversa plugin conformance --timeout`)", d)
}
