package main

import (
	"path/filepath"
	"strings"
)

// commands splits a shell script into its simple commands, each a list of
// words with quotes and backslashes resolved, as sh would read them:
// ';', '&', '|', '&&', '||', newlines, '(' ')', '`', '$(' and '{' '}'
// separate commands; redirections ('>f', '2>&1', '< f') are dropped.
// It reads the script's shape, not its meaning: variables are not
// expanded and an unclosed quote ends the script.
func commands(script string) [][]string {
	var out [][]string
	var cmd []string
	var word strings.Builder
	inWord := false
	redirect := false // the next word is a redirection's target
	flushWord := func() {
		if !inWord {
			return
		}
		w := word.String()
		word.Reset()
		inWord = false
		switch {
		case redirect:
			redirect = false
		case isRedirection(w):
			redirect = strings.IndexAny(w, "<>") == len(w)-1 // "2>" waits for its target
		default:
			cmd = append(cmd, w)
		}
	}
	flushCmd := func() {
		flushWord()
		redirect = false
		if len(cmd) > 0 {
			out = append(out, cmd)
		}
		cmd = nil
	}
	rs := []rune(script)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case c == '\\' && i+1 < len(rs):
			i++
			if rs[i] != '\n' {
				word.WriteRune(rs[i])
				inWord = true
			}
		case c == '\'':
			inWord = true
			for i++; i < len(rs) && rs[i] != '\''; i++ {
				word.WriteRune(rs[i])
			}
		case c == '"':
			inWord = true
			for i++; i < len(rs) && rs[i] != '"'; i++ {
				if rs[i] == '\\' && i+1 < len(rs) && strings.ContainsRune("\"\\$`", rs[i+1]) {
					i++
				}
				word.WriteRune(rs[i])
			}
		case c == '$' && i+1 < len(rs) && rs[i+1] == '(':
			i++
			flushCmd()
		case strings.ContainsRune(";&|\n()`{}", c):
			if c == '&' && inWord && strings.HasSuffix(word.String(), ">") {
				word.WriteRune(c) // 2>&1
				continue
			}
			flushCmd()
		case c == ' ' || c == '\t' || c == '\r':
			flushWord()
		default:
			word.WriteRune(c)
			inWord = true
		}
	}
	flushCmd()
	return out
}

// isRedirection reports whether a word is a redirection operator, with or
// without its target: >f, 2>>f, <f, &>f, 2>&1.
func isRedirection(w string) bool {
	t := strings.TrimLeft(w, "0123456789&")
	return strings.HasPrefix(t, ">") || strings.HasPrefix(t, "<")
}

// shells are the programs whose -c argument (or standard input) is a
// script the guard reads.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "ash": true, "mksh": true}

// wrappers run the command that follows their options: the guard looks
// through them to the program they run.
var wrappers = map[string]bool{"sudo": true, "env": true, "nohup": true, "nice": true, "time": true, "timeout": true,
	"exec": true, "command": true, "xargs": true, "stdbuf": true, "doas": true}

// base is a program word's name without its directory.
func base(word string) string { return filepath.Base(word) }

// program returns the program a simple command runs, looking through
// variable assignments and wrappers (sudo, env, nice -n 5, timeout 10s,
// …), or "" when there is none.
func program(cmd []string) string {
	for i := 0; i < len(cmd); i++ {
		w := cmd[i]
		name := base(w)
		switch {
		case strings.Contains(w, "=") && !strings.HasPrefix(w, "-") && !strings.Contains(w, "/"):
			// VAR=value before the program
		case wrappers[name]:
			// Skip the wrapper's options and their values.
			for i+1 < len(cmd) && (strings.HasPrefix(cmd[i+1], "-") || looksLikeValue(cmd[i+1])) {
				i++
			}
		default:
			return name
		}
	}
	return ""
}

// looksLikeValue reports whether a word after a wrapper is an option's
// value rather than the program: a number or a duration (5, -5, 10s,
// 1.5m), an assignment (A=1).
func looksLikeValue(w string) bool {
	if strings.Contains(w, "=") && !strings.Contains(w, "/") {
		return true
	}
	num := strings.TrimRight(strings.TrimLeft(w, "+-"), "smhd")
	return num != "" && strings.Trim(num, "0123456789.") == ""
}

// script returns the script a shell command runs with -c (its argument
// after the options), or "" when it has none.
func script(argv []string) string {
	if len(argv) == 0 || !shells[base(argv[0])] {
		return ""
	}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if !strings.HasPrefix(a, "-") {
			return ""
		}
		// -c, or combined short options that hold c (-ec, -lc).
		if !strings.HasPrefix(a, "--") && strings.Contains(a, "c") && i+1 < len(argv) {
			return argv[i+1]
		}
	}
	return ""
}
