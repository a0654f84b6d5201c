package ui

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/obversa/obversa/store"
)

// Entry is one recorded event on the run page's timeline.
type Entry struct {
	Rev  int64
	TS   time.Time
	Type string
	// Where is the event's position, or its node when it names no
	// position, or "".
	Where string
	// Data is the event's data, cut to maxEntryData bytes of text.
	Data string
}

// maxEntryData cuts the data shown with a timeline entry; `obversa
// events` prints it whole.
const maxEntryData = 400

func entryOf(e store.Event) Entry {
	var ref struct {
		Node     string `json:"node"`
		Position string `json:"position"`
	}
	_ = json.Unmarshal(e.Data, &ref)
	data := string(e.Data)
	if len(data) > maxEntryData {
		data = strings.ToValidUTF8(data[:maxEntryData], "") + "…"
	}
	where := ref.Position
	if where == "" {
		where = ref.Node
	}
	return Entry{Rev: e.Rev, TS: e.TS, Type: e.Type, Where: where, Data: data}
}

// Timeline is the "timeline" server-sent event: entries in a compact
// form, which the page expands (assets/change.js, ob.timelineEntries;
// docs/ui.md, "Live updates"). A live page is sent a few events per
// node four times a second, and most of each entry repeats the one
// before it: its type, its position, the first digits of its rev and
// time.
type Timeline struct {
	// Types holds each event type of the entries once.
	Types []string `json:"types"`
	// Entries are the events in the record's order, each
	// [rev, ms, type, where, data]: rev and ms (the event's time in Unix
	// milliseconds) counted from the entry before (the first from 0),
	// type an index into Types, where the Entry's Where, or null when it
	// is the entry before's (before the first: ""), and data the
	// Entry's Data.
	Entries [][5]any `json:"entries"`
}

// compactTimeline is es as a Timeline.
func compactTimeline(es []Entry) Timeline {
	t := Timeline{Types: []string{}, Entries: make([][5]any, 0, len(es))}
	types := map[string]int{}
	var rev, ms int64
	where := ""
	for _, e := range es {
		ti, ok := types[e.Type]
		if !ok {
			ti = len(t.Types)
			types[e.Type] = ti
			t.Types = append(t.Types, e.Type)
		}
		var w any
		if e.Where != where {
			w = e.Where
		}
		at := e.TS.UnixMilli()
		t.Entries = append(t.Entries, [5]any{e.Rev - rev, at - ms, ti, w, e.Data})
		rev, ms, where = e.Rev, at, e.Where
	}
	return t
}
