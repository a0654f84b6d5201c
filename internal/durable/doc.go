// Package durable holds the one fsync of a directory that every part of
// Obversa which creates, renames or removes files uses, so that a crash
// cannot lose an entry that was reported written (docs/architecture.md,
// "The record"), and WriteFile, the replacement of a small file (a lock
// file of plugin pins) that no reader sees half written. It is a leaf:
// standard library only.
package durable
