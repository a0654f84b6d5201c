package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// TestVerifyDamageThatSwallowsLines: damage that takes line feeds with it
// — a sector of NULs over the end of one line and the start of the next
// (a write the disk lost), with or without a zero tail after the stream,
// or a line feed overwritten — is one fault, at the first line it hits;
// Verify carries on and checks every line after it, instead of reporting
// each later line's revision as out of place.
func TestVerifyDamageThatSwallowsLines(t *testing.T) {
	t.Parallel()
	src, starts := buildBatches(t, 3, 3, 3, 3, 3)
	full := readBytes(t, filepath.Join(src, eventsFile))
	sector := (starts[1]/sectorSize + 1) * sectorSize // inside batch 2 (revs 4-6)
	if sector+sectorSize >= starts[2] {
		t.Fatalf("batch 2 spans bytes %d-%d; the case needs a whole sector of it", starts[1], starts[2])
	}
	zeroed := func(pad int) []byte {
		b := append([]byte(nil), full...)
		clear(b[sector : sector+sectorSize])
		return append(b, make([]byte, pad)...)
	}
	joined := append([]byte(nil), full...)
	nl := starts[1]
	for joined[nl] != '\n' {
		nl++
	}
	joined[nl] = 'x' // line 4 runs into line 5
	tests := []struct {
		name    string
		content []byte
		events  int64 // events Verify counts: the batches before and after the damage
	}{
		{"a sector of NULs", zeroed(0), 12},
		{"a sector of NULs, then a zero tail", zeroed(8192), 12},
		{"a line feed overwritten", joined, 13}, // rev 6 ends batch 2 on its own
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, _ := runDirWith(t, tt.content)
			rep, err := Verify(context.Background(), dir)
			if !errors.Is(err, ErrCorruptEventStream) || len(rep.Faults) != 1 || rep.Faults[0].Rev != 4 {
				t.Fatalf("Verify: %v, faults %v; want one, at rev 4", err, rep.Faults)
			}
			if rep.Events != tt.events || rep.TornBytes != 0 {
				t.Fatalf("Verify counted %d events and %d torn bytes, want %d events (every one after the damage) and none torn", rep.Events, rep.TornBytes, tt.events)
			}
		})
	}
}
