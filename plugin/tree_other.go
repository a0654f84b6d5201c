//go:build !linux

package plugin

// stop does nothing here: without /proc or process groups the host cannot
// find what a plugin started; the plugin itself is killed by Close.
func (t *tree) stop() error { return nil }
