package runstate

// Run outcome codes (docs/decisions.md) that more than one package
// records or reads; each package that decides a code keeps its own list.
const (
	// CodeStopped ends a run an operator stopped.
	CodeStopped = "STOPPED"
	// CodeAborted is the failure of a position the run's end cut off
	// (graph:node-failed), as the executor records a plugin's own abort.
	CodeAborted = "ABORTED"
)
