package main

import (
	"os"

	// One P unless GOMAXPROCS is set, before gRPC and protobuf initialise.
	_ "github.com/obversa/obversa/plugins/mock-engine/internal/onep"
	"github.com/obversa/obversa/sdk"
	"github.com/obversa/obversa/sdk/enginetest"
)

func main() {
	if err := sdk.ServeEngine(enginetest.New()); err != nil {
		sdk.Logger("mock").Error("serve", "error", err)
		os.Exit(1)
	}
}
