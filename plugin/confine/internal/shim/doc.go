// Package shim is the confining shim's side of plugin confinement
// (docs/confinement.md): a process started with Arg as its first argument
// reads a Payload on file descriptor 3, joins the plugin's cgroup, mounts
// the protected trees read-only in its own mount namespace, sets
// no_new_privs, installs the seccomp filter against Multipath TCP,
// enforces the Landlock ruleset the host built and handed it, and executes
// the verified plugin binary. The domain is made in the plugin's own
// process, never in a thread of the host (docs/decisions.md, "The shim,
// not a confined thread of the host").
//
// The shim answers in this package's init, before the program's main and
// before the packages that do not depend on this one are initialised: the
// Go specification initialises packages one at a time, each the first in
// import-path order whose imports are all initialised, and this package
// imports only the standard library's packages that nearly every other
// package needs too (os, syscall, strconv, ...). So a shim run of the
// obversa binary pays the Go runtime's start and a few dozen small package
// initialisations, not those of gRPC, protobuf, HCL or the PostgreSQL
// driver (docs/decisions.md, "The shim starts before the host's packages
// initialise"). Keep it so: the package's tests list its imports and run
// the shim under GODEBUG=inittrace=1.
package shim
