package hcl

import "testing"

func TestParseSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int64
		err  bool
	}{
		{in: "1GiB", want: 1 << 30},
		{in: "512MiB", want: 512 << 20},
		{in: "1.5 GiB", want: 3 << 29},
		{in: "100MB", want: 100e6},
		{in: "2KB", want: 2000},
		{in: "4096", want: 4096},
		{in: "4096B", want: 4096},
		{in: "2 gigs", err: true},
		{in: "GiB", err: true},
		{in: "", err: true},
		{in: "-1MiB", err: true},
		{in: "99999999TiB", err: true},
	} {
		got, err := ParseSize(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}
