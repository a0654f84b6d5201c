package stream

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/plugin"
)

const secret = "sk-live-0123456789abcdef"

// readAll returns every line of the stream in dir.
func readAll(t *testing.T, dir string) []Line {
	t.Helper()
	var out []Line
	if err := Read(context.Background(), dir, func(l Line) error { out = append(out, l); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func text(ls []Line, position string) string {
	var b strings.Builder
	for _, l := range ls {
		if l.Position == position && l.Kind == KindText {
			b.WriteString(l.Text)
		}
	}
	return b.String()
}

func TestWriteRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := w.Call("a", "dag/a/1", 1)
	for _, ev := range []plugin.RunEvent{
		{Kind: plugin.EventThinking, Text: "hmm"},
		{Kind: plugin.EventText, Text: "hello "},
		{Kind: plugin.EventText, Text: "world\nsecond"},
		{Kind: plugin.EventToolUse, ToolName: "read", ToolID: "t1", ToolJSON: json.RawMessage(`{"path":"x"}`)},
		{Kind: plugin.EventUsage, Usage: plugin.Usage{Known: true, Input: 3, Output: 4}},
	} {
		if err := c.Emit(ev); err != nil {
			t.Fatal(err)
		}
	}
	c.End()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, dir)
	var kinds []string
	for _, l := range got {
		if l.Position != "dag/a/1" || l.Node != "a" || l.Call != 1 || l.TS.IsZero() {
			t.Errorf("line %+v", l)
		}
		kinds = append(kinds, l.Kind)
	}
	if want := []string{"thinking", "text", "text", "tool_use", "usage", "end"}; !cmp.Equal(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	var a Lines
	var shown []string
	for _, l := range got {
		for _, s := range a.Add(l) {
			shown = append(shown, s.Prefix()+" | "+s.Text)
		}
	}
	want := []string{
		"dag/a/1 | (thinking) hmm",
		"dag/a/1 | hello world",
		"dag/a/1 | second",
		`dag/a/1 | tool read {"path":"x"}`,
		"dag/a/1 | usage: in 3 · out 4",
	}
	if diff := cmp.Diff(want, shown); diff != "" {
		t.Errorf("shown (-want +got):\n%s", diff)
	}
	if a.Last("dag/a/1") != "second" {
		t.Errorf("last %q", a.Last("dag/a/1"))
	}
}

// TestRedactsSecretsSplitAcrossDeltas: a known secret never reaches the
// file, whether whole in one delta, cut across deltas, or inside tool JSON.
func TestRedactsSecretsSplitAcrossDeltas(t *testing.T) {
	t.Parallel()
	for cutAt := 1; cutAt < len(secret); cutAt += 3 {
		dir := t.TempDir()
		w, err := Open(dir, Options{Secrets: []string{secret}})
		if err != nil {
			t.Fatal(err)
		}
		c := w.Call("a", "dag/a/1", 1)
		_ = c.Emit(plugin.RunEvent{Kind: plugin.EventText, Text: "key=" + secret[:cutAt]})
		_ = c.Emit(plugin.RunEvent{Kind: plugin.EventText, Text: secret[cutAt:] + " done"})
		_ = c.Emit(plugin.RunEvent{Kind: plugin.EventToolUse, ToolName: "x", ToolJSON: json.RawMessage(`{"k":"` + secret + `"}`)})
		_ = c.Emit(plugin.RunEvent{Kind: plugin.EventText, Text: "tail " + secret})
		c.End()
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(filepath.Join(dir, FileName))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), secret) || strings.Contains(string(raw), secret[:12]) && strings.Contains(string(raw), secret[12:]) {
			t.Fatalf("cut at %d: the secret reached the file:\n%s", cutAt, raw)
		}
		got := readAll(t, dir)
		if txt := text(got, "dag/a/1"); !strings.HasPrefix(txt, "key=") || !strings.Contains(txt, " done") || !strings.Contains(txt, "tail ") {
			t.Errorf("cut at %d: text %q lost its surroundings", cutAt, txt)
		}
	}
}

// TestCapDropsOldestAndSaysSo: past the cap the oldest segment goes; the
// new segment starts with a dropped line for each position whose output
// went; nothing on disk passes the cap.
func TestCapDropsOldestAndSaysSo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const max = 16 << 10
	w, err := Open(dir, Options{MaxBytes: max})
	if err != nil {
		t.Fatal(err)
	}
	a, b := w.Call("a", "dag/a/1", 1), w.Call("b", "dag/b/1", 1)
	for i := range 400 {
		_ = a.Emit(plugin.RunEvent{Kind: plugin.EventText, Text: strings.Repeat("a", 40) + "\n"})
		if i%4 == 0 {
			_ = b.Emit(plugin.RunEvent{Kind: plugin.EventText, Text: "b line\n"})
		}
	}
	a.End()
	b.End()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, n := range []string{FileName, OldFileName} {
		st, err := os.Stat(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		total += st.Size()
	}
	if total > max {
		t.Errorf("%d bytes on disk, cap %d", total, max)
	}
	got := readAll(t, dir)
	dropped := map[string]int64{}
	for _, l := range got {
		if l.Kind == KindDropped {
			dropped[l.Position] += l.Dropped
		}
	}
	if dropped["dag/a/1"] == 0 || dropped["dag/b/1"] == 0 {
		t.Errorf("dropped %v, want both positions named", dropped)
	}
	if last := got[len(got)-1]; last.Kind != KindEnd {
		t.Errorf("last line %+v, want the newest (end)", last)
	}
}

// TestFollowAcrossRotation: a follower started before the writer sees
// every line written, in order, while segments rotate under it (the cap is
// large enough that no segment is dropped before the follower reads it).
func TestFollowAcrossRotation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var seen []string
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, dir, func(l Line) error {
			if l.Kind == KindText {
				mu.Lock()
				seen = append(seen, l.Text)
				mu.Unlock()
			}
			return nil
		})
	}()
	w, err := Open(dir, Options{MaxBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	c := w.Call("a", "dag/a/1", 1)
	var want []string
	for i := range 60 {
		s := strings.Repeat("x", 30) + string(rune('0'+i%10))
		want = append(want, s)
		_ = c.Emit(plugin.RunEvent{Kind: plugin.EventText, Text: s})
		_ = c.Emit(plugin.RunEvent{Kind: plugin.EventUsage})
		if i%4 == 0 {
			time.Sleep(2 * FlushInterval)
		}
	}
	c.End()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, OldFileName)); err != nil {
		t.Fatalf("the stream never rotated: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(FlushInterval)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("followed text (-want +got):\n%s", diff)
	}
}

// TestReopenEndsATornLine: a worker killed mid-line leaves half a line;
// the next worker's lines still parse.
func TestReopenEndsATornLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(`{"kind":"text","position":"dag/a/1","text":"whole"}`+"\n"+`{"kind":"te`), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := w.Call("a", "dag/a/2", 1)
	_ = c.Emit(plugin.RunEvent{Kind: plugin.EventText, Text: "after"})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, dir)
	if text(got, "dag/a/1") != "whole" || text(got, "dag/a/2") != "after" {
		t.Errorf("lines %+v", got)
	}
}

func TestNilWriterDiscards(t *testing.T) {
	var w *Writer
	c := w.Call("a", "dag/a/1", 1)
	if err := c.Emit(plugin.RunEvent{Kind: plugin.EventText, Text: "x"}); err != nil {
		t.Fatal(err)
	}
	c.End()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// FuzzParse: any bytes parse or are refused with ErrLine, never panic; a
// parsed line shown to a person never panics either.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"ts":"2026-01-02T03:04:05.000Z","node":"a","position":"dag/a/1","call":1,"kind":"text","text":"hi"}`))
	f.Add([]byte(`{"kind":"usage","usage":{"known":true,"input":1}}`))
	f.Add([]byte(`{"kind":"dropped","dropped":12}`))
	f.Add([]byte(`{"kind":""}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := Parse(b)
		if err != nil {
			return
		}
		var a Lines
		_ = a.Add(l)
		_ = a.Flush()
	})
}
