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
// storage.max_log_bytes, redacting secrets.
func openLog(runDir, name string, p *plan.Plan, secrets []string) (*logfile.Writer, error) {
	return logfile.Open(filepath.Join(runDir, name), logfile.Options{MaxBytes: p.Storage.MaxLogBytes, Secrets: secrets})
}

// redactor redacts the known secrets of a record policy from text.
func redactor(pol store.Policy) func(string) string {
	return store.NewRedactor(pol.KnownSecrets).RedactString
}
