// Package plugin is Obversa's plugin protocol (docs/writing-plugins.md): the Go types and
// interfaces engines, node bindings and action policies implement (Engine,
// NodeBinding, Policy and the types in types.go and policy.go), the gRPC shims that carry them across a process
// boundary in both directions, the go-plugin handshake, and launching a
// verified plugin binary.
//
// It does not import hashicorp/go-plugin, so that a plugin binary, which
// links it, neither links nor initialises go-plugin (docs/decisions.md,
// "Go plugins serve go-plugin's protocol themselves"): Serve speaks
// go-plugin's protocol itself, and the host's go-plugin client is plugged
// in as a Transport by package plugin/pluginhost. The wire format is proto/obversa/plugin/v1/plugin.proto; its generated code
// lives in internal/pluginv1 and never appears in this package's API.
//
// Host side: LaunchWith (pluginhost.Launch, on go-plugin's client) hashes
// the binary, refuses any digest but the pinned one (docs/plugins.md),
// starts it through its Transport (gRPC only, automatic mTLS, a
// complete environment chosen by the host, no shell) and returns a Client;
// Client.Engine, Client.Node or Client.Policy return the typed interface, Client.Health
// performs the grpc.health.v1 check. Every call takes a context first and
// honours it; cancelling a Run's context cancels its stream.
//
// Plugin side: Serve serves an Engine, a NodeBinding and/or a Policy. Plugin authors
// normally use package sdk, which wraps it.
//
// Errors: a plugin reports a typed *Failure (kind, message, retry-after,
// provider, model). It travels as a Failure message in a gRPC status detail
// (unary calls) or as the terminal message of a Run stream, and comes back
// to the host as a *Failure with the same Kind; message text is never
// parsed. Everything else the host sees wraps one of the sentinel errors in
// errors.go: ErrPluginExited when the process died, ErrPluginTransport for
// other connection failures, ErrProtocol when the plugin broke the protocol
// (for example a result without exactly one final part), ErrMessageTooLarge
// beyond MaxMessageBytes, or the caller's context error when the caller
// cancelled.
//
// Panics in a plugin's handlers are recovered and reported as unknown
// failures; the plugin keeps serving.
package plugin
