// Package hostenv keeps the environment of the host — the shell that
// started `obversa run`, with its API keys and cloud credentials — out of
// reach of a run's processes (docs/decisions.md, "The host's environment").
//
// A node command can read /proc/<pid>/environ of any process of its user
// whose memory it may inspect; as root it may inspect every process. So:
//
//   - Protect marks the calling process non-dumpable (its /proc files then
//     belong to root and same-user processes cannot read them) and
//     rewrites the process's initial environment block — what
//     /proc/<pid>/environ shows — keeping only Allowed variables. Go copied
//     the environment when the process started, so os.Getenv is unchanged.
//   - The watchdog starts the worker with Minimal(os.Environ()) and hands
//     over the values the worker needs (plugins' pass_env and the known
//     secrets) through a pipe, never through the environment.
//
// Allowed is the one allow-list: the plugins' environment (host/launch)
// uses it too.
package hostenv
