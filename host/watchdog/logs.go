package watchdog

import (
	"path/filepath"

	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/internal/logfile"
	"github.com/obversa/obversa/store"
)

// Log files beside a run's record; both are capped by
// storage.max_log_bytes and redacted of known secrets (docs/run-file.md).
const (
	// PluginsLog holds the plugins' stderr and stray stdout, written by
	// the worker.
	PluginsLog = "plugins.log"
	// WorkerLog holds the worker's console output, written by the
	// watchdog.
	WorkerLog = "worker.log"
	// KeeperLog says what the run's keeper stopped once both supervisors
	// were gone.
	KeeperLog = "keeper.log"
)

// openLog opens the capped, redacting log name in runDir under the plan's
// storage.max_log_bytes, redacting secrets. Its error is the run
// directory's (besideRecord).
func openLog(runDir, name string, p *plan.Plan, secrets []string) (*logfile.Writer, error) {
	path := filepath.Join(runDir, name)
	w, err := logfile.Open(path, logfile.Options{MaxBytes: p.Storage.MaxLogBytes, Secrets: secrets})
	if err != nil {
		return nil, besideRecord(path, err)
	}
	return w, nil
}

// besideRecord is the error of opening a file the run keeps beside its
// record (a log, the engines' stream): a *store.StorageError naming the
// path, so that a worker stopped by it pauses the run RUN_STORAGE (or
// STORAGE_FULL) with the path, to be carried on once the file is mended,
// instead of crashing until its restarts run out
// (docs/decisions.md, "Storage faults pause the run").
func besideRecord(path string, err error) error {
	return &store.StorageError{Op: "open", Path: path, Err: err}
}

// redactor redacts the known secrets of a record policy from text.
func redactor(pol store.Policy) func(string) string {
	return store.NewRedactor(pol.KnownSecrets).RedactString
}
