package cmdengine

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeFlag as the first argument switches the re-executed test binary
// into a fake CLI. An argument rather than an environment variable, so
// fuzzing workers started from this process stay test binaries.
const fakeFlag = "-cmdengine-fake-cli"

// fakeEnv is a variable the tests set for commands that inherit it.
const fakeEnv = "CMDENGINE_TEST_INHERITED"

// secretEnv holds a secret the fakes print and the tests expect redacted.
const (
	secretEnv   = "CMDENGINE_TEST_SECRET"
	secretValue = "sk-test-\"quoted\"-secret"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == fakeFlag {
		os.Exit(fake(os.Args[2:]))
	}
	os.Setenv(fakeEnv, "inherited")
	os.Setenv(secretEnv, secretValue)
	os.Exit(m.Run())
}

// fakeArgv is a command running the fake CLI in mode.
func fakeArgv(mode string, args ...string) []string {
	return append([]string{os.Args[0], fakeFlag, mode}, args...)
}

// fake is a misbehaving or well-behaved CLI. Modes:
//
//	echo              copy stdin to stdout
//	args              print each argument on its own line
//	cat FILE          print FILE
//	fail CODE MSG     print MSG to stderr, exit CODE
//	fail-stdout CODE MSG  print MSG to stdout only, exit CODE
//	sleep             sleep for an hour
//	spew              write to stdout forever
//	secret            print the secret to stdout and stderr
//	json              print a claude-like JSON result; a prompt containing
//	                  "ERROR" gives is_error, "EXIT" exits 1 as well
//	jsonl             print claude-like stream-json lines
//	pwd               print the working directory
//	env NAME          print $NAME
func fake(args []string) int {
	if len(args) == 0 {
		return 99
	}
	switch args[0] {
	case "echo":
		_, _ = io.Copy(os.Stdout, os.Stdin)
	case "args":
		for _, a := range args[1:] {
			fmt.Println(a)
		}
	case "cat":
		b, err := os.ReadFile(args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		os.Stdout.Write(b)
	case "fail":
		code, _ := strconv.Atoi(args[1])
		fmt.Fprintln(os.Stderr, args[2])
		return code
	case "fail-stdout":
		code, _ := strconv.Atoi(args[1])
		fmt.Fprintln(os.Stdout, args[2])
		return code
	case "sleep":
		time.Sleep(time.Hour)
	case "spew":
		line := []byte(strings.Repeat("y", 1023) + "\n")
		for {
			if _, err := os.Stdout.Write(line); err != nil {
				return 1
			}
		}
	case "secret":
		fmt.Println("token=" + os.Getenv(secretEnv))
		fmt.Fprintln(os.Stderr, "auth failed for "+os.Getenv(secretEnv))
		if len(args) > 1 {
			code, _ := strconv.Atoi(args[1])
			return code
		}
	case "json":
		in, _ := io.ReadAll(os.Stdin)
		prompt := string(in)
		isErr := strings.Contains(prompt, "ERROR")
		out := map[string]any{
			"type": "result", "subtype": "success", "is_error": isErr,
			"result":            "answer to " + prompt,
			"structured_output": map[string]any{"echo": prompt},
			"model":             "fake-model-1",
			"usage":             map[string]any{"input_tokens": 11, "output_tokens": 22, "cache_read_input_tokens": 3, "cache_creation_input_tokens": 4},
		}
		if isErr {
			out["result"] = "API Error: rate limit reached, retry after 7s"
		}
		fmt.Println("notice: a line before the JSON")
		b, _ := json.Marshal(out)
		fmt.Println(string(b))
		if strings.Contains(prompt, "EXIT") {
			return 1
		}
	case "jsonl":
		in, _ := io.ReadAll(os.Stdin)
		w := bufio.NewWriter(os.Stdout)
		lines := []map[string]any{
			{"type": "system", "subtype": "init", "model": "fake-stream-model"},
			{"type": "assistant", "message": map[string]any{"content": []any{
				map[string]any{"type": "thinking", "thinking": "hmm"},
				map[string]any{"type": "tool_use", "id": "t1", "name": "Read", "input": map[string]any{"path": "a.go"}},
			}}},
			{"type": "user", "message": map[string]any{"content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": "package a"},
			}}},
			{"type": "assistant", "message": map[string]any{"content": []any{
				map[string]any{"type": "text", "text": "final: " + string(in)},
			}}},
			{"type": "result", "is_error": false, "result": "final: " + string(in), "stop_reason": "end_turn",
				"usage": map[string]any{"input_tokens": 5, "output_tokens": 6}},
		}
		for _, l := range lines {
			b, _ := json.Marshal(l)
			w.Write(b)
			w.WriteString("\n")
		}
		if len(args) > 1 && args[1] == "partial" {
			for _, frag := range []string{"fin", "al: ", string(in)} {
				b, _ := json.Marshal(map[string]any{"type": "stream_event", "event": map[string]any{"delta": map[string]any{"text": frag}}})
				w.Write(b)
				w.WriteString("\n")
			}
		}
		w.WriteString("not json, ignored\n")
		w.Flush()
	case "pwd":
		wd, _ := os.Getwd()
		fmt.Print(wd)
	case "env":
		fmt.Print(os.Getenv(args[1]))
	default:
		return 99
	}
	return 0
}
