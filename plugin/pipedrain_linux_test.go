package plugin

import (
	"os"
	"testing"
	"time"
)

// TestDrainReportsWhatItDrops checks drain's answer: nothing dropped when
// the reader finished or the pipe is empty, the unread byte count when a
// writer kept the pipe full past the hard bound.
func TestDrainReportsWhatItDrops(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pending int
		done    bool
		want    int
	}{
		{"reader finished", 5, true, 0},
		{"pipe empty", 0, false, 0},
		{"bytes left at the bound", 5, false, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			defer w.Close()
			if _, err := w.Write(make([]byte, tc.pending)); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			if tc.done {
				close(done)
			}
			now := time.Now()
			if got := drain(r, done, now, now.Add(20*time.Millisecond)); got != tc.want {
				t.Errorf("drain = %d, want %d", got, tc.want)
			}
		})
	}
}
