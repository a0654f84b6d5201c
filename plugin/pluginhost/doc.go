// Package pluginhost is the host's side of Obversa's plugin protocol on
// hashicorp/go-plugin (docs/writing-plugins.md, docs/architecture.md):
// Launch starts a verified plugin binary through go-plugin's client and
// returns a *plugin.Client. Everything else — the types, the client shims,
// the checks before a launch and the stopping of a plugin — is package
// plugin's; this package only supplies its plugin.Transport.
//
// It is the only package of Obversa that imports hashicorp/go-plugin.
// Package plugin, which every Go plugin links, does not: plugin.Serve
// speaks go-plugin's protocol itself, and a plugin process is spared
// go-plugin's package initialisation (docs/decisions.md, "Go plugins
// serve go-plugin's protocol themselves").
package pluginhost
