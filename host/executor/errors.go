package executor

import "errors"

var (
	// ErrRecord is returned when the record cannot be read or appended; the
	// worker stops and the watchdog decides what follows.
	ErrRecord = errors.New("RUN_STORAGE")
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

// Failure codes recorded in graph:node-failed.
const (
	CodeNodeFailed        = "NODE_FAILED"
	CodeTimeout           = "TIMEOUT"
	CodeDenied            = "DENIED"
	CodeEngineUnavailable = "ENGINE_UNAVAILABLE"
	CodeIdentity          = "ENGINE_IDENTITY_UNRESOLVED"
	CodeResultTooLarge    = "RESULT_TOO_LARGE"
	CodeInput             = "INPUT_RENDER"
	CodeBudget            = "BUDGET_STOP"
)
