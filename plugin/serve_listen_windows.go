//go:build windows

package plugin

import "net"

// listenLocal is where a plugin listens on Windows, as go-plugin's own
// server does there: loopback TCP on a free port. dir is not used.
func listenLocal(string) (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
