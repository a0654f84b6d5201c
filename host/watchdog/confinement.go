package watchdog

import (
	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/plugin/confine"
)

// ConfinementReport is the confinement in force for a run's plugins on
// this machine (docs/confinement.md): what the kernel offers and, per
// plugin, its recorded settings as this kernel enforces them.
type ConfinementReport struct {
	// Kernel says what the kernel offers, e.g. "Landlock ABI 7, memory
	// limits by cgroup v1" or "none (kernel lacks Landlock); …".
	Kernel  string              `json:"kernel"`
	Plugins []PluginConfinement `json:"plugins"`
}

// PluginConfinement is one plugin's confinement in force.
type PluginConfinement struct {
	Plugin string `json:"plugin"`
	confine.Description
}

// Confinement describes the confinement of the plugins of p on a kernel
// with sup. A plugin recorded before confinement existed is listed as not
// confined.
func Confinement(p *plan.Plan, sup confine.Support) *ConfinementReport {
	r := &ConfinementReport{Kernel: sup.String(), Plugins: []PluginConfinement{}}
	for _, pp := range p.Plugins {
		if pp.Confine == nil {
			r.Plugins = append(r.Plugins, PluginConfinement{Plugin: pp.Name, Description: confine.Description{
				Read: "everything (not confined: recorded before confinement)", Network: "not confined", Memory: "no limit"}})
			continue
		}
		spec := launch.Spec(pp, p.Storage.Directory, *RunOf(p))
		r.Plugins = append(r.Plugins, PluginConfinement{Plugin: pp.Name, Description: confine.Describe(spec, sup, pp.Confine.Required)})
	}
	return r
}
