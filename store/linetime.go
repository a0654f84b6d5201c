package store

import "time"

// appendTS appends ts in tsLayout (UTC, milliseconds), digits written
// directly: a line's time is formatted once per event on the append path.
// Years outside 0000–9999, which tsLayout writes otherwise, go through
// time.Time.AppendFormat (TestAppendTSIsTheLayout).
func appendTS(dst []byte, ts time.Time) []byte {
	t := ts.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(dst, tsLayout)
	}
	hour, min, sec := t.Clock()
	ms := t.Nanosecond() / 1e6
	d := func(b []byte, v, n int) []byte {
		for i := n - 1; i >= 0; i-- {
			b[i] = byte('0' + v%10)
			v /= 10
		}
		return b[n:]
	}
	var b [len(tsLayout)]byte
	r := d(b[:], year, 4)
	r[0] = '-'
	r = d(r[1:], int(month), 2)
	r[0] = '-'
	r = d(r[1:], day, 2)
	r[0] = 'T'
	r = d(r[1:], hour, 2)
	r[0] = ':'
	r = d(r[1:], min, 2)
	r[0] = ':'
	r = d(r[1:], sec, 2)
	r[0] = '.'
	r = d(r[1:], ms, 3)
	r[0] = 'Z'
	return append(dst, b[:]...)
}
