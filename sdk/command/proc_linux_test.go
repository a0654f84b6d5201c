package command

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseStat(t *testing.T) {
	t.Parallel()
	tail := strings.Repeat(" 0", 15) + " 12345 0 77 0 0" // fields 7-21, 22 start, 23, 24 rss, ...
	tests := []struct {
		name string
		line string
		want procStat
		ok   bool
	}{
		{"plain", "42 (sleep) S 1 42 42" + tail, procStat{pid: 42, ppid: 1, pgid: 42, state: 'S', start: 12345, rssPages: 77, name: "sleep"}, true},
		{"name with spaces and parens", "7 (a) b (c) Z 3 4 5" + tail, procStat{pid: 7, ppid: 3, pgid: 4, state: 'Z', start: 12345, rssPages: 77, name: "a) b (c"}, true},
		{"too few fields", "1 (x) S 1 1", procStat{}, false},
		{"no name", "1 x S 1 1 1" + tail, procStat{}, false},
		{"bad pid", "x (y) S 1 1 1" + tail, procStat{}, false},
		{"bad ppid", "1 (y) S z 1 1" + tail, procStat{}, false},
		{"empty", "", procStat{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStat([]byte(tc.line))
			if (err == nil) != tc.ok {
				t.Fatalf("parseStat error = %v, want ok %v", err, tc.ok)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(procStat{})); diff != "" {
				t.Errorf("parseStat mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadStatSelf(t *testing.T) {
	t.Parallel()
	s, err := readStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.pid != os.Getpid() || s.ppid != os.Getppid() || s.start == 0 || s.rssPages == 0 || !s.alive() {
		t.Errorf("readStat(self) = %+v", s)
	}
}

func TestHasEntry(t *testing.T) {
	t.Parallel()
	env := []byte("A=1\x00XB=2\x00B=22\x00C=3")
	tests := []struct {
		kv   string
		want bool
	}{
		{"A=1", true}, {"C=3", true}, {"B=22", true},
		{"B=2", false}, {"XB=2", true}, {"=1", false}, {"A=", false}, {"", false},
	}
	for _, tc := range tests {
		if got := hasEntry(env, tc.kv); got != tc.want {
			t.Errorf("hasEntry(%q) = %v, want %v", tc.kv, got, tc.want)
		}
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("42 (sleep) S 1 42 42" + strings.Repeat(" 0", 15) + " 12345 0 77 0 0"))
	f.Add([]byte("7 (a) b (c) Z 3 4 5 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 0 1"))
	f.Add([]byte("1 ("))
	f.Add([]byte(")("))
	if b, err := os.ReadFile("/proc/self/stat"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		s, err := parseStat(line)
		if err != nil {
			return
		}
		if !strings.Contains(string(line), "("+s.name+")") {
			t.Errorf("name %q not found in %q", s.name, line)
		}
	})
}

func FuzzHasEntry(f *testing.F) {
	f.Add([]byte("A=1\x00B=2"), "B=2")
	f.Add([]byte("AA=1\x00"), "A=1")
	f.Fuzz(func(t *testing.T, env []byte, kv string) {
		got := hasEntry(env, kv)
		want := false
		if kv != "" {
			for _, e := range strings.Split(string(env), "\x00") {
				if e == kv {
					want = true
				}
			}
		}
		if got != want {
			t.Errorf("hasEntry(%q, %q) = %v, want %v", env, kv, got, want)
		}
	})
}
