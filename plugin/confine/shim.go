package confine

import (
	"github.com/obversa/obversa/internal/cgroup"
)

// ShimArg is the first argument of a process started as the confining
// shim; no other program is started with it.
const ShimArg = "__obversa-confine-shim"

// payload is what the host hands the shim on file descriptor 3: the rules,
// the group to join and the verified binary to execute: the path Exec or,
// when ExecFD is set, the open file on that descriptor (named Exec in the
// plugin's argv).
type payload struct {
	Exec   string        `json:"exec"`
	ExecFD int           `json:"exec_fd,omitempty"`
	Rules  *Rules        `json:"rules"`
	ABI    int           `json:"abi"`
	Cgroup *cgroup.Group `json:"cgroup,omitempty"`
}
