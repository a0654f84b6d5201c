package testutil

import (
	"bytes"
	"os"
	"strconv"
	"testing"
)

// ProcessEnv returns the value of the environment variable name that the
// running process pid was started with (/proc/<pid>/environ), failing t
// when it cannot be read or holds no such variable, or an empty one.
func ProcessEnv(t testing.TB, pid int, name string) string {
	t.Helper()
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(name+"=")); ok && len(v) > 0 {
			return string(v)
		}
	}
	t.Fatalf("process %d has no %s in its environment", pid, name)
	return ""
}
