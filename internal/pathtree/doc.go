// Package pathtree answers whether a path lies in a directory's tree,
// lexically (no file system access, no symbolic links followed): the
// check the run file's decoder makes of paths it resolves and the
// watchdog makes of a failed write's path under the storage directory.
package pathtree
