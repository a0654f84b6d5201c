package plugin

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/obversa/obversa/plugin/confine"
)

// LaunchEnv is the variable LaunchWith sets, to a value of its own for each
// launch, in the plugin's environment. Whatever the plugin starts inherits
// it, so Close finds a descendant that left the plugin's process group and
// session (a daemon: setsid, double fork) and stops it too
// (docs/plugins.md#stopping-a-plugin).
const LaunchEnv = "OBVERSA_PLUGIN_LAUNCH"

// treeGrace is how long a descendant of a closed plugin has between
// SIGTERM and SIGKILL.
const treeGrace = 2 * time.Second

// LeftRunningError is what Client.Close returns when processes the plugin
// started could not be stopped: still alive after SIGKILL, or still in
// the plugin's cgroup. It wraps ErrLeftRunning.
type LeftRunningError struct {
	// Plugin is the plugin's name.
	Plugin string
	// PIDs are the process ids left alive, ascending.
	PIDs []int
}

// Error names the plugin and the processes left.
func (e *LeftRunningError) Error() string {
	ids := make([]string, len(e.PIDs))
	for i, p := range e.PIDs {
		ids[i] = strconv.Itoa(p)
	}
	return fmt.Sprintf("plugin %q: %d process(es) it started could not be stopped (pids %s): %v",
		e.Plugin, len(e.PIDs), strings.Join(ids, ", "), ErrLeftRunning)
}

// Unwrap returns ErrLeftRunning.
func (e *LeftRunningError) Unwrap() error { return ErrLeftRunning }

// tree is everything one launch may have started: the plugin's process
// group, the processes carrying its launch marker and, confined, its
// cgroup.
type tree struct {
	name string
	// marker is LaunchEnv=<value of this launch>.
	marker string
	// pgid is the plugin's process group (the plugin leads it).
	pgid    int
	confine *confine.Prepared
	// bare is the launch's cgroup when its confinement makes no v2 group
	// (bareGroup); nil when none.
	bare *bareGroup
	// supervised: something outside this process stops the plugin's
	// descendants (LaunchConfig.Supervised), so stop skips the /proc scan.
	supervised bool
}

// newMarker returns LaunchEnv=<32 random hex digits>.
func newMarker() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return LaunchEnv + "=" + hex.EncodeToString(b[:])
}

// ProcessTree contains a process started outside LaunchWith — the conformance
// kit's raw launches — as LaunchWith contains a plugin, so that Stop ends
// everything it started the way Client.Close does: its process group,
// the processes carrying its LaunchEnv marker and their descendants, and
// its cgroup (a bare cgroup v2 group the process starts in, where this
// process can make one), which holds even a descendant that left the
// group and session and emptied its environment
// (docs/plugins.md#stopping-a-plugin).
type ProcessTree struct{ t tree }

// NewProcessTree returns the tree of one process; name names it in
// Stop's error. With group false no cgroup is made (a process started
// inside another tree, whose cgroup already holds it).
func NewProcessTree(name string, group bool) *ProcessTree {
	p := &ProcessTree{t: tree{name: name, marker: newMarker()}}
	if group {
		p.t.bare = newBareGroup("")
	}
	return p
}

// Marker returns the tree's LaunchEnv=<value> entry; Prepare adds it to
// the process's environment, and a process started elsewhere that should
// count as the tree's (a stand-in host's plugin) carries it too.
func (p *ProcessTree) Marker() string { return p.t.marker }

// Prepare sets cmd up to start in the tree, before cmd.Start: a process
// group of its own, SIGKILL when the starting thread dies (Linux), the
// marker added to cmd.Env and the tree's cgroup.
func (p *ProcessTree) Prepare(cmd *exec.Cmd) {
	cmd.Env = append(cmd.Env, p.t.marker)
	setProcAttr(cmd)
	p.t.bare.apply(cmd)
}

// Started records the started process, whose process group Stop kills.
func (p *ProcessTree) Started(pid int) { p.t.pgid = pid }

// Stop kills the tree: the marker's processes (SIGTERM, then SIGKILL
// after 2 s), the process group and the cgroup. It returns a
// *LeftRunningError naming what survived, or nil.
func (p *ProcessTree) Stop() error { return p.t.stop() }
