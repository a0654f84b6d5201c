package ui

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/obversa/obversa/internal/bidi"
)

// TestPagesNameEscapedControls: each page names the code points its
// script shows as escapes (common.js, ob.shown), and they are exactly the
// bidirectional controls the command line escapes, so run text holding
// U+202E is not shown reordered on the page.
func TestPagesNameEscapedControls(t *testing.T) {
	t.Parallel()
	storage := t.TempDir()
	newTestRun(t, storage, "r1")
	_, hs := newTestServer(t, storage, Options{})
	meta := regexp.MustCompile(`<meta name="obversa-escaped" content="([^"]*)">`)
	for _, p := range []string{"/", "/runs/r1"} {
		m := meta.FindSubmatch([]byte(get(t, hs.URL+p)))
		if m == nil {
			t.Errorf("GET %s names no escaped code points", p)
			continue
		}
		var ranges [][2]rune
		for _, r := range strings.Split(string(m[1]), ",") {
			lo, hi, _ := strings.Cut(r, "-")
			l, err1 := strconv.ParseInt(lo, 16, 32)
			h, err2 := strconv.ParseInt(hi, 16, 32)
			if err1 != nil || err2 != nil {
				t.Fatalf("GET %s: range %q", p, r)
			}
			ranges = append(ranges, [2]rune{rune(l), rune(h)})
		}
		for r := rune(0); r <= 0x10ffff; r++ {
			in := false
			for _, x := range ranges {
				in = in || r >= x[0] && r <= x[1]
			}
			if in != bidi.IsControl(r) {
				t.Fatalf("GET %s: U+%04X escaped %v, the command line %v", p, r, in, bidi.IsControl(r))
			}
		}
	}
}
