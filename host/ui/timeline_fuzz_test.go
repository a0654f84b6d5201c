package ui

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// entriesOf makes timeline entries of fuzz data: its bytes choose how
// many, their revs and times (gaps, repeats, going back), types, wheres
// (repeated, empty, changing) and data, so that a timeline message holds
// everything an entry's fields can hold.
func entriesOf(data []byte) []Entry {
	at := func(i int) byte {
		if len(data) == 0 {
			return 0
		}
		return data[i%len(data)]
	}
	types := []string{"graph:node-dispatched", "graph:node-attempt-started", "graph:node-completed", "run:worker-started"}
	wheres := []string{"", "dag/a/1", "dag/b[%E2%80%AEx]/2", "a", "dag/a/1"}
	var es []Entry
	rev, ts := int64(at(0))*1000, time.UnixMilli(1_700_000_000_000+int64(at(1))*1e6)
	for i := range len(data) % 17 {
		rev += int64(at(2+i)%4) - 1
		ts = ts.Add(time.Duration(int(at(3+i))-100) * time.Millisecond)
		d := string(data[i%max(len(data), 1):])
		if at(4+i)&1 == 1 {
			d = fmt.Sprintf(`{"node":"n%d","text":"\u202e\"%s"}`, i, data)
		}
		es = append(es, Entry{Rev: rev, TS: ts, Type: types[int(at(5+i))%len(types)], Where: wheres[int(at(6+i))%len(wheres)], Data: d})
	}
	return es
}

// expanded is what the page makes of a Timeline of es: each entry with
// its time in Unix milliseconds.
func expanded(es []Entry) []byte {
	type entry struct {
		Rev   int64  `json:"rev"`
		TS    int64  `json:"ts"`
		Type  string `json:"type"`
		Where string `json:"where"`
		Data  string `json:"data"`
	}
	out := make([]entry, len(es))
	for i, e := range es {
		out[i] = entry{e.Rev, e.TS.UnixMilli(), e.Type, e.Where, e.Data}
	}
	return marshal(out)
}

// FuzzTimelineEntries: for any entries, the page's decoder
// (timelineEntries) makes of the server's compact "timeline" message the
// entries themselves.
func FuzzTimelineEntries(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 2, 3, 4, 5, 6})
	f.Add([]byte("a timeline of sixteen entries or so"))
	f.Add([]byte{0xff, 0xfe, 0, 7})
	js := newJSApplier(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		es := entriesOf(data)
		msg := marshal(compactTimeline(es))
		got, err := js.timeline(msg)
		if err != nil || string(got) == "null" {
			t.Fatalf("the page cannot expand %s: %v", msg, err)
		}
		sameJSON(t, "the page's entries", got, expanded(es))
	})
}

// FuzzTimelineDecoder: the page's decoder takes any "timeline" message
// without throwing, and what it accepts is a list of entries.
func FuzzTimelineDecoder(f *testing.F) {
	f.Add(marshal(compactTimeline(entriesOf([]byte("abcdefgh")))))
	f.Add([]byte(`{"types":["a"],"entries":[[1,2,1,null,"x"]]}`))
	f.Add([]byte(`{"types":["a"],"entries":[[9007199254740991,0,0,null,"x"],[1,0,0,null,"y"]]}`))
	f.Add([]byte(`{"types":{"0":"a"},"entries":[[1,2,0,7,"x"]]}`))
	f.Add([]byte(`{"types":[],"entries":[]}`))
	f.Add([]byte(`[]`))
	js := newJSApplier(f)
	f.Fuzz(func(t *testing.T, msg []byte) {
		if !json.Valid(msg) {
			return // the page gets JSON.parse's error, not the decoder's
		}
		got, err := js.timeline(msg)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) == "null" {
			return
		}
		var es []struct {
			Rev, TS     int64
			Type, Where string
			Data        string
		}
		if err := json.Unmarshal(got, &es); err != nil {
			t.Fatalf("accepted %s and made %s (%v)", msg, got, err)
		}
	})
}
