package pathtree

import (
	"path/filepath"
	"strings"
)

// Within reports whether path is dir or lies below it, by filepath.Rel of
// the two: both should be clean absolute paths. An empty dir holds
// nothing.
func Within(dir, path string) bool {
	if dir == "" {
		return false
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
