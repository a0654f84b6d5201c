//go:build !unix

package plugin

// privateDir cannot check ownership here; a fresh temporary directory is
// used instead.
func privateDir(string, int) bool { return false }
