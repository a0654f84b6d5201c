package main

import (
	"os"
	"runtime"

	"github.com/obversa/obversa/sdk"
	"github.com/obversa/obversa/sdk/enginetest"
)

func main() {
	if os.Getenv("GOMAXPROCS") == "" {
		// One P: the mock does no work of its own between receiving a
		// call and answering it, and on a second, idle P every hand-off
		// between gRPC's goroutines and the call's wakes a thread that
		// finds nothing to do (docs/decisions.md, "Plugin transport").
		runtime.GOMAXPROCS(1)
	}
	if err := sdk.ServeEngine(enginetest.New()); err != nil {
		sdk.Logger("mock").Error("serve", "error", err)
		os.Exit(1)
	}
}
