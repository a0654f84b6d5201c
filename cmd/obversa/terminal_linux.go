package main

import "golang.org/x/sys/unix"

// termiosRequest is the ioctl that reads a terminal's attributes.
const termiosRequest = unix.TCGETS
