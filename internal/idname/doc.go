// Package idname proposes a valid id for a name that breaks the id grammar
// [A-Za-z0-9][A-Za-z0-9._-]{0,127} (docs/architecture.md#the-record), for
// the "for example" of an error that refuses it: a run file's plugin,
// lane, node, key and namespace names, and the command line's --run-id and
// --namespace.
package idname
