package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// commandOf is how a person would type the command process pid runs —
// "obversa resume" for `obversa resume RUN` — from /proc/<pid>/cmdline;
// "" when it cannot be read.
func commandOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	if len(args) == 0 || args[0] == "" {
		return ""
	}
	c := filepath.Base(args[0])
	if len(args) > 1 && !strings.HasPrefix(args[1], "-") {
		c += " " + args[1]
	}
	return c
}

// commandPathOf is the obversa command process pid runs, as cobra names
// it ("obversa resume" for `obversa --storage S resume RUN`); "" when
// its command line cannot be read or names no command of this program.
func commandPathOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	return commandPathIn(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"))
}
