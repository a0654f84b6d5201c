package main

import (
	"regexp"
	"strings"
	"testing"
)

var (
	codeWord = regexp.MustCompile(`\b[A-Z][A-Z0-9]+(?:_[A-Z0-9]+)+\b`)
	wordRun  = 8 // words
)

// repeatedText returns what one line of a message says twice — a stable
// code (an upper-case word with underscores), a path, or a run of eight
// words — or "" when it says nothing twice. A message that wraps an
// error which already names its code, or that quotes the same cause
// twice, reads as noise to the person who must act on it.
func repeatedText(msg string) string {
	for _, line := range strings.Split(msg, "\n") {
		seen := map[string]bool{}
		for _, c := range codeWord.FindAllString(line, -1) {
			if seen[c] {
				return "the code " + c
			}
			seen[c] = true
		}
		words := strings.Fields(line)
		for i, w := range words {
			words[i] = strings.Trim(w, "()[]{}:;,.'\"`")
		}
		paths := map[string]bool{}
		for _, w := range words {
			if strings.Contains(w, "/") && len(w) >= 8 {
				if paths[w] {
					return "the path " + w
				}
				paths[w] = true
			}
		}
		runs := map[string]bool{}
		for i := 0; i+wordRun <= len(words); i++ {
			r := strings.Join(words[i:i+wordRun], " ")
			if runs[r] {
				return "the words " + strings.TrimSpace(r)
			}
			runs[r] = true
		}
	}
	return ""
}

// lineOf returns the first line of text that starts with prefix, or "".
func lineOf(text, prefix string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), prefix) {
			return l
		}
	}
	return ""
}

// noRepeats fails the test when msg says something twice (repeatedText).
func noRepeats(t *testing.T, where, msg string) {
	t.Helper()
	if r := repeatedText(msg); r != "" {
		t.Errorf("%s says %s twice:\n%s", where, r, msg)
	}
}

func TestRepeatedText(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		msg, want string
	}{
		{"paused STORAGE_FULL: the record could not write /r/events.jsonl (STORAGE_FULL: write /r/events.jsonl: no space)", "the code STORAGE_FULL"},
		{"could not write /r/events.jsonl (write /r/events.jsonl: no space)", "the path /r/events.jsonl"},
		{"free space on that file system, then resume; free space on that file system, then resume", "the words free space on that file system then resume"},
		{"paused STORAGE_FULL: the run's record could not write /r/events.jsonl: no space left on device", ""},
		{"RUN_STORAGE: a\nRUN_STORAGE: b", ""},
	} {
		if got := repeatedText(tt.msg); got != tt.want {
			t.Errorf("repeatedText(%q) = %q, want %q", tt.msg, got, tt.want)
		}
	}
}
