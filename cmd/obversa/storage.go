package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/runview"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/internal/regfile"
	"github.com/obversa/obversa/store"
	"github.com/obversa/obversa/store/pgstore"
)

// Where runs are kept (docs/cli.md, "Storage and RUN"): --storage names a
// storage directory (the file backend) or a PostgreSQL database
// (postgres://…, store/pgstore); without it OBVERSA_STORAGE_URL does, and
// without both the default directory .obversa. `obversa run` falls back
// to the run file's storage block instead of the default.

// storageURLEnv names the variable holding the storage URL commands use
// when --storage is not given.
const storageURLEnv = "OBVERSA_STORAGE_URL"

// defaultStorage is --storage's default: the directory .obversa.
const defaultStorage = ".obversa"

// storage returns the storage setting a command uses and whether the user
// chose it (--storage or OBVERSA_STORAGE_URL) rather than the default. A
// storage URL variable that is not a postgres:// URL is a usage error, and
// so is a --storage directory that steps back out with ".." (hcl.StepsBack;
// docs/decisions.md, "A storage directory does not step back out with ..").
func (g *globals) storage() (setting string, chosen bool, err error) {
	if g.flags != nil && g.flags.Changed("storage") {
		if named, back := hcl.StepsBack(g.storageFlag); back && !pgstore.IsURL(g.storageFlag) {
			return "", false, usageErr(fmt.Errorf(`--storage %s goes into %q and back out of it with "..": where that leads depends on whether %q is a symbolic link; give the directory itself, for example --storage %s`,
				echoArg(g.storageFlag), named, named, echoArg(filepath.Clean(g.storageFlag))))
		}
		return g.storageFlag, true, checkStorageURL(g.storageFlag, "--storage")
	}
	if u := os.Getenv(storageURLEnv); u != "" {
		if !pgstore.IsURL(u) {
			return "", false, usageErr(fmt.Errorf("%s is set to %s, which is not a postgres:// URL; unset it to keep runs in a directory (--storage DIR)",
				storageURLEnv, pgstore.Redact(u)))
		}
		return u, true, checkStorageURL(u, storageURLEnv)
	}
	return g.storageFlag, false, nil
}

// checkStorageURL refuses a database URL setting that from names (the
// flag or the variable) as a usage error (exit 2, as other bad flag
// values) when pgstore.ParseURL does: one holding a password, or with a
// bad parameter or password file. A directory setting is not checked here.
func checkStorageURL(setting, from string) error {
	if !pgstore.IsURL(setting) {
		return nil
	}
	if _, err := pgstore.ParseURL(setting); err != nil {
		return usageErr(fmt.Errorf("%s: %w", from, err))
	}
	return nil
}

// openStorage opens the backend that holds namespace's runs: the
// PostgreSQL database a postgres:// URL names (pgstore.IsURL), keeping the
// files beside each record (logs, the live output stream, workspace
// snapshots) under localDir; else the file backend in the storage
// directory setting names. Every command reaches stored runs through it
// (directly, or through findRun). Errors: the URL's (pgstore.ErrConfig,
// never showing a password), connection and schema errors, and
// store.ErrInvalidID for the namespace.
func openStorage(ctx context.Context, setting, localDir, namespace string) (store.Backend, error) {
	if pgstore.IsURL(setting) {
		return pgstore.OpenURL(ctx, setting, localDir, namespace)
	}
	return store.Open(setting, namespace)
}

// runRef is a stored run a command was given (a watchdog.Ref), holding
// what it opened; Close releases it.
type runRef interface {
	watchdog.Ref
	// Verify re-checks the run's whole record (store.Backend.Verify).
	Verify(ctx context.Context) (store.Report, error)
	// LocalDir is the run's directory beside the record on this host (its
	// logs and live output stream): the run directory itself for the file
	// backend.
	LocalDir(ctx context.Context) (string, error)
	// Close releases the connections the run's handle opened.
	Close() error
}

// findRun resolves RUN, the argument every command that acts on a stored
// run takes (docs/cli.md, "Storage and RUN"):
//   - with a file storage, the path of a run directory (one holding
//     events.jsonl), else a run id under the storage directory and
//     --namespace;
//   - with a database storage, a run id in --namespace.
//
// A run that does not exist is a usage error (exit 2) saying where it was
// looked for.
func (g *globals) findRun(ctx context.Context, arg string) (runRef, error) {
	setting, _, err := g.storage()
	if err != nil {
		return nil, err
	}
	if !pgstore.IsURL(setting) {
		dir, err := g.runDir(setting, arg)
		if err != nil {
			return nil, err
		}
		return dirRun{watchdog.DirRef(dir)}, nil
	}
	if err := store.ValidID(arg); err != nil {
		return nil, usageErr(fmt.Errorf("%q is not a run id (runs in a database are named by id, with --namespace): %w", arg, err))
	}
	r := newDBRun(setting, g.namespace, arg)
	if err := r.open(ctx); err != nil {
		r.Close()
		if errors.Is(err, store.ErrRunNotFound) {
			return nil, usageErr(fmt.Errorf("%w: no run %q in namespace %q of %s", store.ErrRunNotFound, arg, g.namespace, pgstore.Redact(setting)))
		}
		return nil, failedErr(err)
	}
	return r, nil
}

// childRun is the run a watchdog names to its worker and keeper
// (watchdog.Ref.Args): --run-dir, or --run-id in the database --storage
// names. Nothing is opened yet: a worker connects once it has read libpq's
// variables from its watchdog. A terminal on stdin, or flags that name no
// run, mean a person started the command: watchdog.ErrNotFromWatchdog
// says what to run instead (a worker would otherwise wait on the terminal
// for the watchdog's first line).
func (g *globals) childRun(dir, id string) (runRef, error) {
	if isTerminal(os.Stdin) {
		return nil, usageErr(watchdog.ErrNotFromWatchdog)
	}
	setting, _, err := g.storage()
	if err != nil {
		return nil, err
	}
	switch {
	case dir != "" && id == "":
		return dirRun{watchdog.DirRef(dir)}, nil
	case dir == "" && id != "" && pgstore.IsURL(setting):
		return newDBRun(setting, g.namespace, id), nil
	}
	return nil, usageErr(fmt.Errorf("%w (a watchdog names the run with --run-dir DIR, or with --run-id ID and a database --storage)", watchdog.ErrNotFromWatchdog))
}

// listRuns lists the runs of the storage and namespace commands use
// (runview.List): a storage directory that does not exist is a usage
// error; a database is opened once for every run.
func (g *globals) listRuns(ctx context.Context, keep func(runview.Summary) bool) ([]runview.Summary, []runview.Broken, error) {
	setting, _, err := g.storage()
	if err != nil {
		return nil, nil, err
	}
	var b store.Backend
	var ref func(id string) runRef
	if pgstore.IsURL(setting) {
		// The runs' local directories are not read: any will do.
		pb, err := pgstore.OpenURL(ctx, setting, os.TempDir(), g.namespace)
		if err != nil {
			return nil, nil, failedErr(err)
		}
		b = pb
		ref = func(id string) runRef {
			return &dbRun{url: setting, namespace: g.namespace, id: id, b: pb, shared: true}
		}
	} else {
		if err := storageDirErr(setting); err != nil {
			return nil, nil, err
		}
		st, err := store.Open(setting, g.namespace)
		if err != nil {
			return nil, nil, failedErr(err)
		}
		b = st
		ref = func(id string) runRef { return dirRun{watchdog.DirRef(st.RunDir(id))} }
	}
	defer b.Close()
	ids, err := b.ListRuns(ctx)
	if err != nil {
		return nil, nil, failedErr(err)
	}
	list, broken := runview.List(ctx, ids, func(ctx context.Context, id string) (*runstate.State, string, bool, error) {
		r := ref(id)
		defer r.Close()
		st, live, err := foldRun(ctx, r)
		return st, r.String(), live, err
	}, time.Now(), keep)
	return list, broken, nil
}

// runDir resolves RUN for the file backend in the storage directory
// root: the path of a run directory (one holding events.jsonl, whatever
// is at that name: the store then says what is wrong with it), else a run
// id under root and --namespace.
func (g *globals) runDir(root, arg string) (string, error) {
	if _, err := os.Lstat(filepath.Join(arg, "events.jsonl")); err == nil {
		return arg, nil
	}
	if err := store.ValidID(arg); err != nil {
		if fi, serr := os.Stat(arg); serr == nil {
			return "", usageErr(notRunDir(arg, fi))
		} else if strings.ContainsRune(arg, filepath.Separator) {
			why := serr.Error()
			var pe *fs.PathError
			if errors.As(serr, &pe) {
				why = pe.Err.Error()
			}
			return "", usageErr(fmt.Errorf("%w: no run directory %s (%s); pass the run directory printed by `obversa run`, or a run id", store.ErrRunNotFound, echoArg(arg), why))
		}
		return "", usageErr(fmt.Errorf("%s is neither a run directory nor a run id: %w", echoArg(arg), err))
	}
	if fi, err := os.Stat(root); err == nil && !fi.IsDir() {
		return "", storageDirErr(root)
	}
	st, err := store.Open(root, g.namespace)
	if err != nil {
		return "", failedErr(err)
	}
	dir := st.RunDir(arg)
	if _, err := os.Stat(filepath.Join(dir, "events.jsonl")); err != nil {
		if fi, serr := os.Stat(dir); serr == nil {
			return "", usageErr(notRunDir(dir, fi))
		}
		return "", usageErr(fmt.Errorf("%w: no run %q under %s (namespace %q); pass the run directory printed by `obversa run`, or --storage", store.ErrRunNotFound, arg, root, g.namespace))
	}
	return dir, nil
}

// storageDirErr refuses setting, a storage directory setting, as a usage
// error when nothing is there or what is there is not a directory (a run
// file or another file named by mistake); nil when it is a directory.
func storageDirErr(setting string) error {
	const how = "pass the directory of a run file's storage block with --storage (default .obversa beside the run file), or a database's URL"
	fi, err := os.Stat(setting)
	switch {
	case err != nil:
		return usageErr(fmt.Errorf("no storage directory %s: %s", echoArg(setting), how))
	case !fi.IsDir():
		kind := "a file"
		if !fi.Mode().IsRegular() {
			kind = regfile.Kind(fi.Mode())
		}
		return usageErr(fmt.Errorf("%s is %s, not a storage directory: %s", echoArg(setting), kind, how))
	}
	return nil
}

// notRunDir says why path, which exists, is not a run directory: it is
// not a directory, or it holds no events.jsonl — the storage directory or
// another directory named by mistake, or a run directory whose creation
// was cut short before its record was created (store.CreateRun makes the
// directory first), in which nothing of a run was recorded.
func notRunDir(path string, fi os.FileInfo) error {
	if !fi.IsDir() {
		kind := "a file"
		if !fi.Mode().IsRegular() {
			kind = regfile.Kind(fi.Mode())
		}
		return fmt.Errorf("%w: %s is not a run directory (it is %s); pass the run directory printed by `obversa run` (<storage>/<namespace>/runs/<run-id>), or a run id", store.ErrRunNotFound, path, kind)
	}
	return fmt.Errorf("%w: %s is a directory without events.jsonl, not a run directory; pass the run directory printed by `obversa run` (<storage>/<namespace>/runs/<run-id>; `obversa runs` lists them), or a run id. A run directory without events.jsonl is left by a run whose creation was cut short (or is still under way): nothing of it was recorded, and it can be removed", store.ErrRunNotFound, path)
}

// dirRun is a run directory of the file backend.
type dirRun struct{ watchdog.DirRef }

// Verify re-checks the run directory (store.Verify).
func (d dirRun) Verify(ctx context.Context) (store.Report, error) {
	return store.Verify(ctx, string(d.DirRef))
}

// LocalDir is the run directory.
func (d dirRun) LocalDir(context.Context) (string, error) { return string(d.DirRef), nil }

// Close does nothing: a run directory holds nothing open.
func (dirRun) Close() error { return nil }
