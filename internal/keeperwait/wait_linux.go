package keeperwait

import (
	"os"
	"syscall"
)

// EndedEnv marks the keeper this package executed once its pipe ended:
// that run goes on to the keeper's body.
const EndedEnv = "OBVERSA_KEEPER_PIPE_ENDED"

// fGetPipeSz is fcntl's F_GETPIPE_SZ (linux/fcntl.h), which package
// syscall does not name: what a pipe holds without a reader. It is 64 KiB
// by default, one page for a user past pipe-user-pages-soft (pipe(7)).
const fGetPipeSz = 1032

func init() {
	if !isDirKeeper(os.Args) || os.Getenv(EndedEnv) != "" {
		return
	}
	wait()
}

// isDirKeeper says whether args are those of `obversa keeper --run-dir
// DIR`, as the watchdog starts a keeper (watchdog.DirRef.Args).
func isDirKeeper(args []string) bool {
	return len(args) == 4 && args[1] == "keeper" && args[2] == "--run-dir"
}

// wait reads stdin to its end, puts what it read on a new pipe as stdin
// and executes this binary again with EndedEnv set. When it cannot
// execute, it returns with stdin replaced all the same (a writer on a
// goroutine of its own feeds the new pipe when what was read does not
// fit in it), and the keeper's body runs in this process.
func wait() {
	var got []byte
	buf := make([]byte, 4096)
	for {
		n, err := syscall.Read(0, buf)
		if err == syscall.EINTR {
			continue
		}
		if n <= 0 {
			break
		}
		got = append(got, buf[:n]...)
	}
	var p [2]int
	if syscall.Pipe2(p[:], syscall.O_CLOEXEC) != nil {
		return // stdin stays as it is: ended, and the body sees that
	}
	if syscall.Dup3(p[0], 0, 0) != nil {
		syscall.Close(p[0])
		syscall.Close(p[1])
		return
	}
	syscall.Close(p[0])
	// What the new pipe cannot hold before the exec goes through a writer
	// of its own, and this process runs the body: a blocking write here
	// would never end.
	size, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(p[1]), fGetPipeSz, 0)
	if errno != 0 || len(got) > int(size) {
		go writeAll(p[1], got)
		return
	}
	writeAll(p[1], got)
	env := append(os.Environ(), EndedEnv+"=1")
	_ = syscall.Exec("/proc/self/exe", os.Args, env)
	// The exec failed: the body runs here, on the pipe just filled.
}

// writeAll writes b to fd and closes it.
func writeAll(fd int, b []byte) {
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			break
		}
		b = b[n:]
	}
	syscall.Close(fd)
}
