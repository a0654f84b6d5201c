package confine

import (
	"github.com/obversa/obversa/internal/cgroup"
	"github.com/obversa/obversa/plugin/confine/internal/shim"
)

// ShimArg is the first argument of a process started as the confining
// shim; no other program is started with it.
const ShimArg = shim.Arg

// payload is what the host turns into the shim's payload
// (shimCommand): the rules, the group to join and the verified binary to
// execute: the path Exec or, when the caller hands its open file, that
// file (named Exec in the plugin's argv).
type payload struct {
	Exec   string
	Rules  *Rules
	ABI    int
	Cgroup *cgroup.Group
}
