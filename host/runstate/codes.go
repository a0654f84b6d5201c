package runstate

// Run outcome codes (docs/decisions.md) that more than one package
// records or reads; each package that decides a code keeps its own list.
const (
	// CodeStopped ends a run an operator stopped.
	CodeStopped = "STOPPED"
	// CodeAborted is the failure of a position the run's end cut off
	// (graph:node-failed), as the executor records a plugin's own abort.
	CodeAborted = "ABORTED"
	// CodeStorageFull pauses a run whose record could not be written
	// because its device or quota is full (ENOSPC, EDQUOT); the output
	// names the path. Resumable once space is freed.
	CodeStorageFull = "STORAGE_FULL"
	// CodeRunStorage pauses a run whose record could not be written or
	// read for another I/O reason; the output names the path.
	CodeRunStorage = "RUN_STORAGE"
	// CodeArtifactNotFound pauses a run that needs artifacts missing from
	// its record; the output names their digests.
	CodeArtifactNotFound = "ARTIFACT_NOT_FOUND"
	// CodeArtifactIntegrity pauses a run that needs artifacts whose bytes
	// no longer match their digests.
	CodeArtifactIntegrity = "ARTIFACT_INTEGRITY"
	// CodePluginStartFailed pauses a run whose worker could not start one
	// of its plugins; the output names them and quotes the cause.
	CodePluginStartFailed = "PLUGIN_START_FAILED"
	// CodePluginDied is the cause a worker reports when a plugin process
	// died under an attempt (run:worker-exited's code): the watchdog
	// restarts the worker, which carries the position on by the crash
	// table.
	CodePluginDied = "PLUGIN_DIED"
)
