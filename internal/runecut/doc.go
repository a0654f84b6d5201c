// Package runecut cuts text to a byte bound on a rune boundary. It is a
// leaf (standard library only) shared by the command line and the host,
// which each bound text they print or record and mark the cut their own
// way.
package runecut
