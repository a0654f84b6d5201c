package snapcodec

import (
	"bytes"
	"errors"
	"math"
	"testing"
	"time"
)

// values is one of each kind a payload holds, edge cases included.
type values struct {
	u    uint64
	i    int64
	b    bool
	s    []string
	blob [][]byte
	t    []time.Time
}

func sample() values {
	return values{
		u: math.MaxUint64, i: math.MinInt64, b: true,
		s:    []string{"", "dag/a/1", "dag/a/1", "ü"},
		blob: [][]byte{nil, {}, []byte(`{"x":1}`), []byte(`{"x":1}`)},
		t: []time.Time{{}, time.Date(2026, 12, 1, 12, 0, 0, 123, time.UTC),
			time.Date(2026, 12, 1, 12, 0, 0, 5, time.FixedZone("", 3600))},
	}
}

func (v values) write(w *Writer) {
	w.Uint(v.u)
	w.Int(v.i)
	w.Bool(v.b)
	w.Uint(uint64(len(v.s)))
	for _, s := range v.s {
		w.Str(s)
	}
	w.Uint(uint64(len(v.blob)))
	for _, b := range v.blob {
		w.Bytes(b)
	}
	w.Uint(uint64(len(v.t)))
	for _, t := range v.t {
		w.Time(t)
	}
}

func read(r *Reader) values {
	v := values{u: r.Uint(), i: r.Int(), b: r.Bool()}
	for range r.Len() {
		v.s = append(v.s, r.Str())
	}
	for range r.Len() {
		v.blob = append(v.blob, r.Bytes())
	}
	for range r.Len() {
		v.t = append(v.t, r.Time())
	}
	return v
}

// TestRoundTrip: every kind comes back as written — nil and empty byte
// strings apart, times with their instant and zone offset — and a
// repeated string or byte string is stored once.
func TestRoundTrip(t *testing.T) {
	want := sample()
	w := NewWriter(0)
	want.write(w)
	p, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(p, []byte("dag/a/1")); n != 1 {
		t.Errorf("a repeated string is stored %d times", n)
	}
	if n := bytes.Count(p, []byte(`{"x":1}`)); n != 1 {
		t.Errorf("a repeated byte string is stored %d times", n)
	}
	r, err := NewReader(p)
	if err != nil {
		t.Fatal(err)
	}
	got := read(r)
	if err := r.Done(); err != nil {
		t.Fatal(err)
	}
	if got.u != want.u || got.i != want.i || got.b != want.b {
		t.Errorf("numbers: got %v %v %v", got.u, got.i, got.b)
	}
	for i := range want.s {
		if got.s[i] != want.s[i] {
			t.Errorf("string %d: %q, want %q", i, got.s[i], want.s[i])
		}
	}
	for i := range want.blob {
		if (got.blob[i] == nil) != (want.blob[i] == nil) || !bytes.Equal(got.blob[i], want.blob[i]) {
			t.Errorf("byte string %d: %#v, want %#v", i, got.blob[i], want.blob[i])
		}
	}
	for i := range want.t {
		_, wo := want.t[i].Zone()
		_, go_ := got.t[i].Zone()
		if !got.t[i].Equal(want.t[i]) || wo != go_ {
			t.Errorf("time %d: %v, want %v", i, got.t[i], want.t[i])
		}
	}
	// Appending to a byte string never writes into the next one.
	for i, b := range got.blob {
		if cap(b) != len(b) {
			t.Errorf("byte string %d has room past its end (%d of %d)", i, len(b), cap(b))
		}
	}
}

// TestDamage: a payload cut short, grown, or with a byte changed is an
// error wrapping ErrCorrupt, or decodes to other values, never a panic.
func TestDamage(t *testing.T) {
	w := NewWriter(0)
	sample().write(w)
	p, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(p) {
		if err := decodeAll(p[:n]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("cut to %d bytes: %v, want ErrCorrupt", n, err)
		}
	}
	if err := decodeAll(append(bytes.Clone(p), 0)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a byte added: %v, want ErrCorrupt", err)
	}
	for i := range p {
		q := bytes.Clone(p)
		q[i] ^= 0xff
		if err := decodeAll(q); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Errorf("byte %d flipped: %v does not wrap ErrCorrupt", i, err)
		}
	}
}

func decodeAll(p []byte) error {
	r, err := NewReader(p)
	if err != nil {
		return err
	}
	read(r)
	return r.Done()
}

// FuzzReader reads arbitrary bytes as a payload: NewReader and every
// read return values or an error wrapping ErrCorrupt, never panic, and
// a count never exceeds the bytes left.
func FuzzReader(f *testing.F) {
	w := NewWriter(0)
	sample().write(w)
	p, _ := w.Finish()
	f.Add(p)
	f.Add(p[:len(p)/2])
	f.Add([]byte{0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%v does not wrap ErrCorrupt", err)
			}
			return
		}
		// Read the body as a stream of every kind, in turn.
		for k := 0; r.Err() == nil && k < 10_000; k++ {
			switch k % 6 {
			case 0:
				left := len(r.body) - r.off
				if n := r.Len(); n > left {
					t.Fatalf("a count of %d with %d bytes left", n, left)
				}
			case 1:
				r.Int()
			case 2:
				r.Bool()
			case 3:
				r.Str()
			case 4:
				r.Bytes()
			case 5:
				r.Time()
			}
		}
		if err := r.Done(); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%v does not wrap ErrCorrupt", err)
		}
	})
}

// TestZeroAfterError: once a read fails, every later read returns the
// zero value, the one-byte numbers read without a call too, although
// bytes are left, and Err keeps the first error.
func TestZeroAfterError(t *testing.T) {
	w := NewWriter(0)
	w.Uint(5)
	w.Uint(7)
	w.Int(-3)
	w.Bool(true)
	w.Uint(300)
	p, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(p)
	if err != nil {
		t.Fatal(err)
	}
	if v := r.Uint(); v != 5 {
		t.Fatalf("first number %d, want 5", v)
	}
	r.Fail("does not fit")
	first := r.Err()
	if u, i, b, u2 := r.Uint(), r.Int(), r.Bool(), r.Uint(); u != 0 || i != 0 || b || u2 != 0 {
		t.Fatalf("reads after an error gave %d %d %v %d, want zero values", u, i, b, u2)
	}
	if !errors.Is(r.Err(), ErrCorrupt) || r.Err() != first || r.Done() != first {
		t.Fatalf("Err %v, Done %v, want the first error %v", r.Err(), r.Done(), first)
	}
}

// TestTimeLengthPastMaxInt: a time whose length does not fit an int is
// corrupt, not a slice with a negative end (it panicked).
func TestTimeLengthPastMaxInt(t *testing.T) {
	for _, n := range []uint64{math.MaxUint64, 1 << 63, math.MaxInt64 + 2} {
		w := NewWriter(0)
		w.Uint(n)
		w.Bool(true)
		p, err := w.Finish()
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewReader(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Time(); !got.IsZero() || !errors.Is(r.Err(), ErrCorrupt) {
			t.Errorf("time of %d bytes: %v, %v; want the zero time and ErrCorrupt", n, got, r.Err())
		}
	}
}
