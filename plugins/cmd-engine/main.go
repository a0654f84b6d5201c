package main

import (
	"os"

	"github.com/obversa/obversa/plugins/cmd-engine/internal/cmdengine"
	"github.com/obversa/obversa/sdk"
)

func main() {
	err := sdk.Serve(sdk.WithEngine(cmdengine.NewEngine()), sdk.WithNode(cmdengine.NewNode()))
	if err != nil {
		sdk.Logger("cmd").Error("serve", "error", err)
		os.Exit(1)
	}
}
