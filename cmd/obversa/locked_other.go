//go:build !linux

package main

// commandOf is "": only Linux tells another process's command line here.
func commandOf(int) string { return "" }

// commandPathOf is "": only Linux tells another process's command line
// here.
func commandPathOf(int) string { return "" }
