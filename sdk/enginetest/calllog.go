package enginetest

import (
	"os"
	"strings"

	"github.com/obversa/obversa/plugin"
)

// logCall appends the call to effects_file, then to calls_log, and says
// whether the engine is ready: always, except for a preflight call while
// ready_file does not say so.
func (e *Engine) logCall(c *compiled, req plugin.RunRequest) (ready bool, err error) {
	purpose := req.Purpose
	if purpose == "" {
		purpose = plugin.PurposeOrdinary
	}
	if c.cfg.EffectsFile != "" { // the line is built only to be written
		if err := e.appendLine(c.cfg.EffectsFile, strings.Join([]string{
			dash(req.NodeID), dash(req.Position), dash(req.AttemptID), string(purpose),
		}, " ")); err != nil {
			return false, err
		}
	}
	call := "ordinary"
	ready = true
	if purpose == plugin.PurposePreflight {
		ready = c.cfg.ReadyFile == "" || fileSaysReady(c.cfg.ReadyFile)
		call = "live:ready"
		if !ready {
			call = "live:not-ready"
		}
	}
	if err := e.appendLine(c.cfg.CallsLog, call); err != nil {
		return false, err
	}
	return ready, nil
}

// appendLine appends line and a newline to path, if path is set.
func (e *Engine) appendLine(path, line string) error {
	if path == "" {
		return nil
	}
	e.files.Lock()
	defer e.files.Unlock()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		_, err = f.WriteString(line + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return &plugin.Failure{Kind: plugin.FailureUnknown, Message: "mock engine log: " + err.Error()}
	}
	return nil
}

// fileSaysReady reports whether path holds "ready".
func fileSaysReady(path string) bool {
	b, err := os.ReadFile(path)
	return err == nil && strings.TrimSpace(string(b)) == "ready"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
