//go:build !linux

package main

import "golang.org/x/sys/unix"

// termiosRequest is the ioctl that reads a terminal's attributes (the
// BSDs' and macOS's name for TCGETS).
const termiosRequest = unix.TIOCGETA
