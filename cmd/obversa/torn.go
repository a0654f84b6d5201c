package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// tornTails lists the torn tails a run directory holds before a command
// opens its record for writing: the file store moves a torn tail — the
// bytes of an append cut off before it was committed — aside to
// events.jsonl.torn-<time> when it opens the record so (docs/decisions.md,
// "A zero-filled record tail"), and says nothing of it, so the command
// says afterwards what was moved (said). A run kept in a database has no
// such tail: its list is empty and said says nothing.
type tornTails struct {
	dir    string          // the run directory; "" for a database run
	before map[string]bool // torn tails there before the command
}

// tornPattern matches the torn tails the store moves aside.
const tornPattern = "events.jsonl.torn-*"

// tornBefore lists ref's torn tails now.
func tornBefore(ref runRef) *tornTails {
	d, ok := ref.(dirRun)
	if !ok {
		return &tornTails{}
	}
	t := &tornTails{dir: string(d.DirRef), before: map[string]bool{}}
	names, _ := filepath.Glob(filepath.Join(t.dir, tornPattern))
	for _, n := range names {
		t.before[n] = true
	}
	return t
}

// said writes to w, one line each, the torn tails moved aside since
// tornBefore — their size and where they are now — and reports whether
// there were any.
func (t *tornTails) said(w io.Writer) bool {
	if t.dir == "" {
		return false
	}
	names, _ := filepath.Glob(filepath.Join(t.dir, tornPattern))
	sort.Strings(names)
	any := false
	for _, n := range names {
		if t.before[n] {
			continue
		}
		size := "its"
		if fi, err := os.Stat(n); err == nil {
			size = fmt.Sprintf("%d", fi.Size())
		}
		fmt.Fprintf(w, "events.jsonl ended in a torn write (%s bytes after the last committed event, an append cut off before it was committed): moved them to %s; nothing recorded was lost\n", size, n)
		any = true
	}
	return any
}
