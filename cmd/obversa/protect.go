package main

import (
	"fmt"
	"os"

	"github.com/obversa/obversa/internal/hostenv"
)

// protect hides this process's environment from the run's processes
// before anything else runs (internal/hostenv): the watchdog (`run`,
// `resume`) and the worker read secrets from it, and node commands of the
// run could otherwise read it through /proc.
func protect() {
	if err := hostenv.Protect(); err != nil {
		fmt.Fprintf(os.Stderr, "warning: %v; processes of the run may be able to read this process's environment\n", err)
	}
}
