package pathtree

import "testing"

func TestWithin(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		dir, path string
		want      bool
	}{
		{"/a/b", "/a/b", true},
		{"/a/b", "/a/b/c", true},
		{"/a/b", "/a/bc", false},
		{"/a/b", "/a", false},
		{"/a/b", "/a/b/../c", false},
		{"/a/b", "/a/b/..c", true},
		{"/", "/x", true},
		{"", "/x", false},
		{"/a", "relative", false},
	} {
		if got := Within(tt.dir, tt.path); got != tt.want {
			t.Errorf("Within(%q, %q) = %v, want %v", tt.dir, tt.path, got, tt.want)
		}
	}
}
