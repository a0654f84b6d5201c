// Command guard is an action policy plugin (docs/policies.md): before
// every attempt's effects, the host asks it whether the attempt may take
// effect. It denies a binding whose command runs a program its
// deny_binaries lists, waits for a person when a command or a prompt
// matches one of its wait patterns (by default "git push", "rm -rf" and
// "curl"), and allows the rest. README.md says how it reads commands.
package main

import (
	"fmt"
	"os"

	"github.com/obversa/obversa/sdk"
)

func main() {
	if err := sdk.ServePolicy(newGuard()); err != nil {
		fmt.Fprintln(os.Stderr, "guard:", err)
		os.Exit(1)
	}
}
