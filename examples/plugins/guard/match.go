package main

import (
	"strings"
	"unicode"
)

// pattern is one wait pattern: the words a command or prompt must hold
// one after the other ("git push" is git, then push).
type pattern struct {
	text  string
	words []string
}

func newPattern(text string) pattern {
	return pattern{text: text, words: strings.Fields(text)}
}

// matchCommand reports whether the words of one simple command hold p:
// p's words in a row, the first compared with the word's program name
// (/usr/bin/git is git) — so "git push" matches git push origin main and
// /usr/bin/git push, but not echo pushing git.
func (p pattern) matchCommand(words []string) bool {
	if len(p.words) == 0 {
		return false
	}
	for i := 0; i+len(p.words) <= len(words); i++ {
		if base(words[i]) != p.words[0] && words[i] != p.words[0] {
			continue
		}
		ok := true
		for j := 1; j < len(p.words); j++ {
			if words[i+j] != p.words[j] {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// matchText reports whether free text (a prompt, an input's other
// strings) holds p's words in a row, ignoring case and the punctuation
// around words: "Please git push the branch" holds "git push".
func (p pattern) matchText(text string) bool {
	lower := pattern{text: p.text, words: strings.Fields(strings.ToLower(p.text))}
	return lower.matchCommand(textWords(strings.ToLower(text)))
}

// textWords splits free text into words: runs of letters, digits and the
// characters commands are made of (- _ . / : @ + =).
func textWords(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("-_./:@+=~", r)
	})
}
