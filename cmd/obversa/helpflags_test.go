package main

import (
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestBoolFlagsTakeNoValueInHelp: pflag reads a `quoted` phrase of a flag's
// usage as the name of its value, so a switch whose usage quotes a
// command was listed as taking one (`--pause obversa resume`). No switch
// of any command may show a value in --help.
func TestBoolFlagsTakeNoValueInHelp(t *testing.T) {
	t.Parallel()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		check := func(f *pflag.Flag) {
			if f.Value.Type() != "bool" {
				return
			}
			if name, _ := pflag.UnquoteUsage(f); name != "" {
				t.Errorf("%s --%s is a switch, but --help shows it taking %q: %s", c.CommandPath(), f.Name, name, f.Usage)
			}
		}
		c.LocalFlags().VisitAll(check)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot())
}
