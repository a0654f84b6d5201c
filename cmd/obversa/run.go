package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/internal/idname"
	"github.com/obversa/obversa/store"
	"github.com/obversa/obversa/store/pgstore"
)

func newRunCmd(g *globals) *cobra.Command {
	var runID string
	var progress string
	var asJSON, tofu bool
	cmd := &cobra.Command{
		Use:   "run [--run-id ID] [--json] FILE",
		Short: "Validate a run file, pin its plugins, and run its graph under a watchdog",
		Long: `run validates FILE, pins its plugins, records a new run and runs its graph under a
watchdog in the foreground, printing its result.

Ctrl-C (or SIGTERM) pauses the run: the worker is stopped and the run records
OPERATOR_PAUSE, as ` + "`obversa stop --pause`" + ` does; ` + "`obversa resume RUN`" + ` carries it on
and ` + "`obversa stop RUN`" + ` ends it. A second Ctrl-C forces: the command exits at once
(130) and leaves the run interrupted, which ` + "`obversa resume RUN`" + ` takes over. Before
the run is recorded, Ctrl-C cancels the command and keeps nothing.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			mode, err := progressMode(progress, asJSON)
			if err != nil {
				return err
			}
			if runID != "" {
				if err := store.ValidID(runID); err != nil {
					return usageErr(fmt.Errorf("--run-id: %w; for example --run-id %s", err, idname.Suggest(runID, "run-1")))
				}
			}
			stopProfile, err := startCPUProfile(runCPUProfileEnv)
			if err != nil {
				return failedErr(err)
			}
			defer stopProfile()
			sigs, stop := watchSignals()
			defer stop()
			ctx := sigs.ctx
			po, url, err := runOptions(cmd, g, watchdog.PrepareOptions{RunID: runID, TrustOnFirstUse: tofu})
			if err != nil {
				return err
			}
			// Until the run is recorded, Ctrl-C cancels the command
			// (sigs.prep); from then on it pauses the run.
			pr, err := watchdog.Prepare(sigs.prep, args[0], po)
			if err != nil {
				return refusal(err)
			}
			if url == "" && po.Storage == "" {
				url = pr.RunFile.Storage.URL
			}
			printWarnings(cmd.ErrOrStderr(), pr.Warnings)
			pre := prestartWorker(url, pr)
			defer pre.Abandon()
			chosen := "`storage.directory` in " + pr.RunFile.Filename
			if po.Storage != "" {
				chosen = "--storage"
			}
			ref, run, owner, err := createRun(sigs.prep, url, chosen, pr)
			if err != nil {
				return err
			}
			defer ref.Close()
			defer run.Close()
			fmt.Fprintf(os.Stderr, "run %s: record in %s\n", pr.Plan.RunID, recordPlace(ref, run))
			sigs.setRun(ref.Shell())
			view := watchRun(ref, mode, os.Stderr)
			res, err := watchdog.Supervise(ctx, ref, run, watchdog.SuperviseOptions{Owner: owner, Pause: sigs.pause, Verified: pr.Verified, Prestarted: pre})
			view.Stop()
			if err != nil {
				return failedErr(err)
			}
			return report(ctx, cmd.OutOrStdout(), res, ref, asJSON)
		},
	}
	cmd.Flags().StringVar(&runID, "run-id", "", "run id (default: time-based)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result object {run_id, kind, code, output}")
	cmd.Flags().BoolVar(&tofu, "lock", false, "pin unpinned plugins to their current digest and write obversa.lock.hcl")
	addProgressFlag(cmd, &progress)
	return cmd
}

// runOptions completes po with the storage and namespace given on the
// command line, which win over the run file's: a PostgreSQL URL is
// returned as url (po.Storage stays empty), a directory goes into
// po.Storage. Errors are g.storage's (a storage setting that is refused).
func runOptions(cmd *cobra.Command, g *globals, po watchdog.PrepareOptions) (watchdog.PrepareOptions, string, error) {
	setting, chosen, err := g.storage()
	if err != nil {
		return po, "", err
	}
	url := ""
	switch {
	case chosen && pgstore.IsURL(setting):
		url = setting
	case chosen:
		po.Storage = setting
	}
	if cmd.Flags().Changed("namespace") {
		po.Namespace = g.namespace
	}
	return po, url, nil
}

// prestartWorker starts the run's first worker while the record is
// created (watchdog.Prestart) when the run is kept in a storage
// directory (url empty): the worker's program start then overlaps the
// watchdog's. nil when it is not started; Supervise then starts it.
func prestartWorker(url string, pr *watchdog.Prepared) *watchdog.Prestarted {
	if url != "" {
		return nil
	}
	b, err := store.Open(pr.Plan.Storage.Directory, pr.Plan.Namespace)
	if err != nil {
		return nil
	}
	dir := b.RunDir(pr.Plan.RunID)
	if _, err := os.Lstat(dir); err == nil {
		// The run id is taken: Create refuses it, and a worker marked as
		// that run's process must not wait beside it meanwhile.
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	pre, err := watchdog.Prestart(exe, watchdog.DirRef(dir), pr.Verified)
	if err != nil {
		return nil
	}
	return pre
}

// createRun opens the backend of the prepared run — the database url
// names, else the plan's storage directory — and creates the run there
// (watchdog.Create), returning it with its ownership and the runRef that
// names it. Refusals become exit statuses: an existing run id (existingRun),
// anything else that kept nothing of the run — a known secret or a storage
// limit in the plan, a full device — exit 2.
func createRun(ctx context.Context, url, chosen string, pr *watchdog.Prepared) (runRef, store.Record, store.Ownership, error) {
	setting, local, ns := pr.Plan.Storage.Directory, pr.Plan.Storage.Directory, pr.Plan.Namespace
	if url != "" {
		setting = url
	}
	b, err := openStorage(ctx, setting, local, ns)
	if err != nil {
		return nil, nil, nil, failedErr(err)
	}
	run, owner, err := watchdog.Create(ctx, b, pr)
	if err != nil {
		defer b.Close()
		if errors.Is(err, store.ErrRunExists) {
			return nil, nil, nil, existingRun(ctx, b, url, pr.Plan.RunID, err)
		}
		// Nothing of the run was kept (a full device, a refused
		// definition): a refusal, exit 2. A storage directory that
		// cannot be written is named with what chose it.
		if url == "" && storageFault(err) {
			return nil, nil, nil, usageErr(fmt.Errorf("the run was not started: %w; %s", err, watchdog.StorageAdvice(err, chosen)))
		}
		return nil, nil, nil, usageErr(fmt.Errorf("the run was not started: %w", err))
	}
	if pb, ok := b.(*pgstore.Backend); ok {
		return &dbRun{url: url, namespace: ns, id: pr.Plan.RunID, b: pb}, run, owner, nil
	}
	return dirRun{watchdog.DirRef(run.Dir())}, run, owner, nil
}

// storageFault reports whether err is a storage directory that is full,
// read-only or not writable by this user.
func storageFault(err error) bool {
	return errors.Is(err, store.ErrStorageFull) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) ||
		errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrPermission)
}

// recordPlace says where a run's record is: its directory, or its
// database (without credentials) and the local directory of its logs.
func recordPlace(ref runRef, run store.Record) string {
	if db, ok := ref.(*dbRun); ok {
		return fmt.Sprintf("%s, namespace %s (logs in %s)", db.b.Config(), db.namespace, run.Dir())
	}
	return run.Dir()
}

// existingRun explains why a run id cannot be started again: another
// watchdog holds it (PROCESS_LOCKED, exit 2), or it exists and can only be
// resumed (exit 2).
func existingRun(ctx context.Context, b store.Backend, url, id string, cause error) error {
	var ref runRef
	if pb, ok := b.(*pgstore.Backend); ok {
		ref = &dbRun{url: url, namespace: b.Namespace(), id: id, b: pb}
	} else {
		ref = dirRun{watchdog.DirRef(b.(*store.Store).RunDir(id))}
	}
	run, err := b.OpenRunReadOnly(ctx, id)
	if errors.Is(err, store.ErrRunNotFound) {
		// The directory exists without events.jsonl: store.CreateRun
		// makes the directory first.
		return noRecordYet(cause, ref)
	}
	if err != nil {
		return failedErr(err)
	}
	defer run.Close()
	o, err := ref.Owner(ctx, run)
	if err != nil {
		return failedErr(err)
	}
	if o.Live {
		return lockedRefusal(ctx, ref, fmt.Errorf("%w: %s", &store.LockedError{Dir: ref.String(), Holder: o.Holder, Known: true}, cause),
			"; choose another --run-id")
	}
	if run.Rev() == 0 {
		return noRecordYet(cause, ref)
	}
	return usageErr(fmt.Errorf("%w; choose another --run-id, or carry it on with `obversa resume %s`", cause, ref.Shell()))
}

// noRecordYet refuses a run id whose run holds no event and no process
// holds: another `obversa run` of the same id is creating it (between the
// directory and its lock, watchdog.Create), or a creation was cut short,
// which `obversa resume` cannot carry on (nothing was recorded).
func noRecordYet(cause error, ref runRef) error {
	if _, ok := ref.(*dbRun); ok {
		return usageErr(fmt.Errorf("%w, with no event recorded: another `obversa run` is creating it, or its creation was cut short (the id cannot be used again); choose another --run-id", cause))
	}
	return usageErr(fmt.Errorf("%w, with no event recorded: another `obversa run` is creating it, or its creation was cut short (nothing of it was recorded: once no `obversa run` of this id is running, remove it with rm -r %s); choose another --run-id", cause, ref.Shell()))
}

// refusal turns a Prepare error into a usage error; run file diagnostics
// travel as diagnostics, printed with their source snippets (or in the
// refusal object of --json).
func refusal(err error) error {
	var de *watchdog.DiagnosticsError
	if errors.As(err, &de) {
		return diagsErr(de.Diags)
	}
	return usageErr(fmt.Errorf("the run was not started: %w", err))
}
