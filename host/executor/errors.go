package executor

import (
	"errors"

	"github.com/obversa/obversa/host/runstate"
)

var (
	// ErrRecord is returned when a batch cannot be appended to the record; the
	// worker stops and the watchdog decides what follows. It wraps the
	// store's error, whose code (store.Code: STORAGE_FULL, RUN_STORAGE, …)
	// is the failure's; its own text names no code, so that a message
	// never carries two.
	ErrRecord = errors.New("the run's record could not be appended")
	// ErrNotStarted is returned when the record has no graph:run-started.
	ErrNotStarted = errors.New("run has no graph:run-started event")
	// ErrPluginMissing is returned when the plan names a plugin the worker
	// did not launch.
	ErrPluginMissing = errors.New("plugin not launched")
	// ErrPluginDied is returned by Execute when a plugin process died
	// under an attempt; nothing was recorded for the attempt.
	ErrPluginDied = errors.New("plugin process died")
	// errRefused marks an intermediate record the store's policy refused;
	// it goes back to the attempt, the loop carries on.
	errRefused = errors.New("refused by the record's policy")
)

// Failure codes recorded in graph:node-failed (docs/decisions.md, "Codes
// and event names").
const (
	// CodeNodeFailed: the node's effect failed (the plugin reported a
	// failure that is not a timeout or an abort).
	CodeNodeFailed = "EFFECT_FAILED"
	// CodeAborted: the attempt was cancelled — its plugin reported it
	// aborted, or the run ended while it ran.
	CodeAborted           = runstate.CodeAborted
	CodeTimeout           = "TIMEOUT"
	CodeDenied            = "DENIED"
	CodeKnownSecret       = "KNOWN_SECRET"
	CodeEngineUnavailable = "ENGINE_UNAVAILABLE"
	CodeIdentity          = "ENGINE_IDENTITY_UNRESOLVED"
	CodeResultTooLarge    = "RESULT_TOO_LARGE"
	CodeInput             = "INPUT_RENDER"
	CodeBudget            = "BUDGET_STOP"
	// CodeOutOfMemory: the kernel's OOM killer ended a process of the
	// plugin under its confine.memory limit (docs/confinement.md).
	CodeOutOfMemory = "OUT_OF_MEMORY"
)
