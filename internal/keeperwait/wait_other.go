//go:build !linux

package keeperwait

// EndedEnv marks the keeper this package executed once its pipe ended;
// outside Linux a keeper is never executed again.
const EndedEnv = "OBVERSA_KEEPER_PIPE_ENDED"
