package main

import (
	"os"

	"github.com/obversa/obversa/sdk"
	"github.com/obversa/obversa/sdk/enginetest"
)

func main() {
	if err := sdk.ServeEngine(enginetest.New()); err != nil {
		sdk.Logger("mock").Error("serve", "error", err)
		os.Exit(1)
	}
}
