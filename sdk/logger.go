package sdk

import (
	"os"

	"github.com/hashicorp/go-hclog"
)

// stderr is the process's standard error captured at start-up, before
// Serve redirects os.Stderr into go-plugin's stdio stream, so that loggers
// made at any time write JSON where the host parses it.
var stderr = os.Stderr

// Logger returns an hclog logger named name that writes JSON lines to the
// plugin's standard error at trace level; the host parses each line and
// re-logs it at its level under the plugin's name, dropping what is below
// the host's own level. It is safe to create before or after Serve.
func Logger(name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       name,
		Output:     stderr,
		JSONFormat: true,
		Level:      hclog.Trace,
	})
}
