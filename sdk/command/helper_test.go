package command

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv switches the re-executed test binary into a misbehaving child.
const helperEnv = "COMMAND_TEST_HELPER"

// waitingFileEnv names the file the orphan-wait helper makes once it
// printed its grandchild's pid and waits.
const waitingFileEnv = "COMMAND_TEST_WAITING_FILE"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode, os.Args[1:]))
	}
	// Tests choose their own owner markers; one inherited from whoever runs
	// the tests would win over them.
	os.Unsetenv(EnvRunOwner)
	os.Setenv("COMMAND_TEST_INHERITED", "inherited-value")
	os.Setenv("COMMAND_TEST_NOT_ALLOWED", "leaked")
	os.Exit(m.Run())
}

// helperArgv returns argv and env entries that run the test binary as the
// helper in mode with args.
func helperArgv(mode string, args ...string) ([]string, []string) {
	return append([]string{os.Args[0]}, args...), []string{helperEnv + "=" + mode}
}

// helper is the body of a re-executed child. Modes:
//
//	echo          copy stdin to stdout, then print "done" to stderr
//	exit N        print "out"/"err", exit with status N
//	env           print the environment, one entry per line
//	sleep         sleep forever (dies on SIGTERM)
//	ignore-term   ignore SIGTERM, print "ready", sleep forever
//	spew          write to stdout forever
//	spew-err      write to stderr forever
//	alloc N [exit] allocate and touch N MiB, print "allocated", sleep (or exit)
//	orphan        start a setsid grandchild that ignores SIGTERM and holds
//	              stdout, print its pid, exit 0
//	orphan-wait   like orphan, but keep running
//	bulk N        write N bytes to stdout, all into the pipe at once where
//	              the pipe can be grown to N, then exit 0
//	hold DIR      write its pid to DIR/pid, print "before", wait for
//	              DIR/go to exist, exit 0
//	run HOW       Run a command, as a plugin does: HOW is end (exit 0),
//	              deadline (sleep, stopped by a 200 ms timeout), killed
//	              (sleep until this helper is killed), or end-subgroup and
//	              deadline-subgroup (the same with a command that first
//	              makes a cgroup under its own)
//	subgroup exit|sleep  make a cgroup under its own, then exit 0 or sleep
func helper(mode string, args []string) int {
	switch mode {
	case "echo":
		_, _ = io.Copy(os.Stdout, os.Stdin)
		fmt.Fprint(os.Stderr, "done")
		return 0
	case "exit":
		code, _ := strconv.Atoi(args[0])
		fmt.Fprint(os.Stdout, "out")
		fmt.Fprint(os.Stderr, "err")
		return code
	case "env":
		for _, e := range os.Environ() {
			fmt.Println(e)
		}
		return 0
	case "sleep":
		time.Sleep(time.Hour)
		return 0
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		if os.Getenv("COMMAND_TEST_READY_FD") == "3" {
			ready := os.NewFile(3, "ready")
			fmt.Fprintln(ready, "ready")
			ready.Close()
		}
		time.Sleep(time.Hour)
		return 0
	case "spew", "spew-err":
		w := os.Stdout
		if mode == "spew-err" {
			w = os.Stderr
		}
		buf := make([]byte, 4096)
		for i := range buf {
			buf[i] = 'x'
		}
		for {
			if _, err := w.Write(buf); err != nil {
				return 1
			}
		}
	case "alloc":
		mib, _ := strconv.Atoi(args[0])
		mem := make([]byte, mib<<20)
		for i := 0; i < len(mem); i += 4096 {
			mem[i] = 1
		}
		fmt.Println("allocated")
		if len(args) > 1 && args[1] == "exit" {
			return int(mem[len(mem)/2]) - 1
		}
		time.Sleep(time.Hour)
		return int(mem[0])
	case "orphan", "orphan-wait":
		// The grandchild reports on fd 3 once SIGTERM is ignored, so the
		// test exercises the SIGKILL path rather than a lucky SIGTERM.
		r, w, err := os.Pipe()
		if err != nil {
			return 2
		}
		gc := exec.Command(os.Args[0])
		gc.Env = append(os.Environ(), helperEnv+"=ignore-term", "COMMAND_TEST_READY_FD=3")
		gc.Stdout, gc.Stderr = os.Stdout, os.Stderr
		gc.ExtraFiles = []*os.File{w}
		gc.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := gc.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		w.Close()
		_, _ = io.ReadAll(r)
		fmt.Printf("grandchild %d\n", gc.Process.Pid)
		if mode == "orphan-wait" {
			// Tell the test it may stop the command now.
			if f := os.Getenv(waitingFileEnv); f != "" {
				_ = os.WriteFile(f, nil, 0o600)
			}
			time.Sleep(time.Hour)
		}
		return 0
	case "bulk", "hold":
		return outputHelper(mode, args)
	case "run":
		return runHelper(args[0])
	case "subgroup":
		// As a nested run or a container tool does: a group of its own
		// under its command group.
		if err := makeSubgroup(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		if args[0] == "sleep" {
			time.Sleep(time.Hour)
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
	return 99
}

// outputHelper is the body of the helper modes that test how output is
// read: bulk and hold.
func outputHelper(mode string, args []string) int {
	switch mode {
	case "bulk":
		n, _ := strconv.Atoi(args[0])
		growPipe(os.Stdout, n)
		if _, err := os.Stdout.Write(bytes.Repeat([]byte{'x'}, n)); err != nil {
			return 1
		}
		return 0
	case "hold":
		if err := os.WriteFile(filepath.Join(args[0], "pid"), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			return 2
		}
		fmt.Println("before")
		for {
			if _, err := os.Stat(filepath.Join(args[0], "go")); err == nil {
				return 0
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return 99
}

// runHelper is the body of the run helper mode: it Runs a helper command
// and exits 0 when the command ended as how asks.
func runHelper(how string) int {
	req := Request{Timeout: time.Minute}
	switch how {
	case "end":
		req.Argv, req.Env = helperArgv("exit", "0")
	case "end-subgroup":
		req.Argv, req.Env = helperArgv("subgroup", "exit")
	case "deadline", "killed":
		req.Argv, req.Env = helperArgv("sleep")
	case "deadline-subgroup":
		req.Argv, req.Env = helperArgv("subgroup", "sleep")
	default:
		return 99
	}
	deadline := strings.HasPrefix(how, "deadline")
	if deadline {
		req.Timeout = 200 * time.Millisecond
	}
	res, err := Run(context.Background(), req)
	if err != nil || res.ExitCode != 0 && !res.TimedOut || deadline != res.TimedOut {
		fmt.Fprintf(os.Stderr, "run %s: %+v, %v\n", how, res, err)
		return 1
	}
	return 0
}
