package stream

import (
	"fmt"
	"strings"

	"github.com/obversa/obversa/internal/runecut"
	"github.com/obversa/obversa/plugin"
)

// Shown is one line for a person: the attempt it belongs to and its text.
type Shown struct {
	Node     string `json:"node"`
	Position string `json:"position"`
	Call     int    `json:"call,omitempty"`
	// Kind is the kind of the stream lines it came from.
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// Prefix is the position the line is printed under: "dag/draft/1", or
// "dag/draft/1 call 2" for a fallback call.
func (s Shown) Prefix() string {
	if s.Call > 1 {
		return fmt.Sprintf("%s call %d", s.Position, s.Call)
	}
	return s.Position
}

// Lines turns stream lines into lines for people: text and thinking
// deltas are joined per engine call and cut at newlines, other events get
// one line each. It also keeps each position's last line of text, what a
// live view shows beside an attempt. The zero value is ready to use; it is
// not safe for concurrent use.
type Lines struct {
	open  map[string]*partial // by position and call
	order []string            // keys of open, first seen first
	last  map[string]string   // position → last text line
}

type partial struct {
	node, position, kind string
	call                 int
	text                 strings.Builder
}

// maxShown cuts tool input and results shown on one line.
const maxShown = 200

// Add takes one stream line and returns the lines it completes.
func (a *Lines) Add(l Line) []Shown {
	if a.open == nil {
		a.open, a.last = map[string]*partial{}, map[string]string{}
	}
	key := fmt.Sprintf("%s\x00%d", l.Position, l.Call)
	base := Shown{Node: l.Node, Position: l.Position, Call: l.Call, Kind: l.Kind}
	switch l.Kind {
	case KindText, KindThinking:
		p := a.open[key]
		var out []Shown
		if p != nil && p.kind != l.Kind {
			out = a.close(key)
			p = nil
		}
		if p == nil {
			p = &partial{node: l.Node, position: l.Position, kind: l.Kind, call: l.Call}
			a.open[key] = p
			a.order = append(a.order, key)
		}
		p.text.WriteString(l.Text)
		s := p.text.String()
		for {
			i := strings.IndexByte(s, '\n')
			if i < 0 {
				break
			}
			out = append(out, a.shown(p, s[:i]))
			s = s[i+1:]
		}
		p.text.Reset()
		p.text.WriteString(s)
		if l.Kind == KindText && strings.TrimSpace(s) != "" {
			a.last[l.Position] = strings.TrimSpace(s)
		}
		return out
	case KindEnd:
		return a.close(key)
	}
	out := a.close(key)
	switch l.Kind {
	case KindToolUse:
		base.Text = strings.TrimSpace("tool " + l.Tool + " " + cut(string(l.JSON)))
	case KindToolResult:
		base.Text = strings.TrimSpace("tool result " + l.Tool + " " + cut(string(l.JSON)))
	case KindUsage:
		base.Text = "usage: " + UsageText(l.Usage)
	case KindDropped:
		base.Text = fmt.Sprintf("[%d bytes of earlier output dropped: storage.max_stream_bytes]", l.Dropped)
		if l.Position == "" {
			base.Text = fmt.Sprintf("[%d bytes of earlier output of the run dropped: storage.max_stream_bytes]", l.Dropped)
		}
	default:
		base.Text = "[" + l.Kind + "]"
	}
	return append(out, base)
}

// Flush returns the unfinished lines of every open call, in the order
// the calls began.
func (a *Lines) Flush() []Shown {
	var out []Shown
	for len(a.order) > 0 {
		out = append(out, a.close(a.order[0])...)
	}
	return out
}

// Last returns the last line of text streamed for position, finished or
// not ("" when none).
func (a *Lines) Last(position string) string { return a.last[position] }

// close ends an open call's text.
func (a *Lines) close(key string) []Shown {
	p := a.open[key]
	if p == nil {
		return nil
	}
	delete(a.open, key)
	for i, k := range a.order {
		if k == key {
			a.order = append(a.order[:i], a.order[i+1:]...)
			break
		}
	}
	if p.text.Len() == 0 {
		return nil
	}
	return []Shown{a.shown(p, p.text.String())}
}

func (a *Lines) shown(p *partial, text string) Shown {
	if p.kind == KindText && strings.TrimSpace(text) != "" {
		a.last[p.position] = strings.TrimSpace(text)
	}
	if p.kind == KindThinking {
		text = "(thinking) " + text
	}
	return Shown{Node: p.node, Position: p.position, Call: p.call, Kind: p.kind, Text: text}
}

func cut(s string) string {
	if len(s) > maxShown {
		return runecut.Prefix(s, maxShown) + "…"
	}
	return s
}

// UsageText is a usage for people: "unknown", or its counters
// ("in 120 · out 45 · cache read 10"), zero cache counters left out.
// Unknown is never shown as zero.
func UsageText(u *plugin.Usage) string {
	if u == nil || !u.Known {
		return "unknown"
	}
	s := fmt.Sprintf("in %d · out %d", u.Input, u.Output)
	if u.CacheRead > 0 {
		s += fmt.Sprintf(" · cache read %d", u.CacheRead)
	}
	if u.CacheCreation > 0 {
		s += fmt.Sprintf(" · cache write %d", u.CacheCreation)
	}
	return s
}
