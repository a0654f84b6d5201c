package confine

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/obversa/obversa/internal/testutil"
)

// layout is a workspace holding a storage directory, as the default run
// file layout has it.
type layout struct {
	ws, storage, record, scratch, outside, secret string
}

func newLayout(t *testing.T) layout {
	t.Helper()
	dir := t.TempDir()
	l := layout{
		ws:      filepath.Join(dir, "ws"),
		outside: filepath.Join(dir, "outside"),
		secret:  filepath.Join(dir, "secret"),
	}
	l.storage = filepath.Join(l.ws, ".obversa")
	l.record = filepath.Join(l.storage, "default", "runs", "r1")
	l.scratch = filepath.Join(l.storage, "default", "scratch", "r1")
	for _, d := range []string{l.record, l.scratch, filepath.Join(l.ws, "src"), l.outside, l.secret} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(l.record, "events.jsonl"), filepath.Join(l.secret, "key"), filepath.Join(l.ws, "top.txt")} {
		if err := os.WriteFile(f, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

func (l layout) spec() Spec {
	return Spec{Write: []string{l.ws, l.record}, Own: []string{l.scratch}, Protect: []string{l.storage}, DenyRead: []string{l.secret}}
}

func TestBuild(t *testing.T) {
	l := newLayout(t)
	for _, mountNS := range []bool{false, true} {
		r, err := Build(l.spec(), mountNS)
		if err != nil {
			t.Fatal(err)
		}
		writes := map[string]bool{}
		for _, p := range r.Paths {
			if p.Write {
				writes[p.Path] = true
			}
		}
		if !writes[l.scratch] {
			t.Errorf("mountNS=%v: the scratch directory is not writable: %+v", mountNS, r.Paths)
		}
		if got := strings.Join(r.Dropped, ","); got != l.record {
			t.Errorf("mountNS=%v: dropped %q, want the record directory %s", mountNS, got, l.record)
		}
		if mountNS {
			if !writes[l.ws] || len(r.Split) != 0 || strings.Join(r.ReadOnly, ",") != l.storage || strings.Join(r.Rebind, ",") != l.scratch {
				t.Errorf("mount mode: ws writable %v, split %v, read-only %v, rebind %v", writes[l.ws], r.Split, r.ReadOnly, r.Rebind)
			}
			continue
		}
		if writes[l.ws] || !writes[filepath.Join(l.ws, "src")] || !writes[filepath.Join(l.ws, "top.txt")] || strings.Join(r.Split, ",") != l.ws {
			t.Errorf("split mode: ws writable %v, src %v, top.txt %v, split %v", writes[l.ws], writes[filepath.Join(l.ws, "src")], writes[filepath.Join(l.ws, "top.txt")], r.Split)
		}
		for p := range writes {
			if within(p, l.storage) && p != l.scratch {
				t.Errorf("split mode: %s in the storage directory is writable", p)
			}
		}
	}
	if _, err := Build(Spec{Write: []string{"relative"}}, false); err == nil {
		t.Error("Build accepted a relative path")
	}
}

// shell runs script confined by s and returns its combined output.
func shell(t *testing.T, s Spec, dir, script string) (string, *Prepared) {
	t.Helper()
	return shellOn(t, Detect(), s, dir, script)
}

// shellOn is shell on a kernel with sup.
func shellOn(t *testing.T, sup Support, s Spec, dir, script string) (string, *Prepared) {
	t.Helper()
	p, err := Prepare(s, sup, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Release() })
	cmd, err := p.Command("/bin/sh", []string{"-c", script})
	if err != nil {
		t.Fatal(err)
	}
	cmd.Dir = dir
	cmd.SysProcAttr = nil
	if f := p.Unshareflags(); f != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: f}
	}
	out, err := cmd.CombinedOutput()
	for _, f := range cmd.ExtraFiles {
		f.Close()
	}
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return string(out), p
}

func needLandlock(t *testing.T) Support {
	t.Helper()
	sup := Detect()
	if sup.LandlockABI < MinNetworkABI {
		t.Skipf("kernel: %s", sup)
	}
	return sup
}

// TestConfinedWrites runs a shell confined to a workspace holding the
// storage directory: it writes where it may, and every other write,
// the record directory's included though write lists it, fails; with a
// mount namespace (as root) and without one (split rules).
func TestConfinedWrites(t *testing.T) {
	sup := needLandlock(t)
	modes := []Support{sup}
	if sup.MountNS {
		split := sup
		split.MountNS = false
		modes = append(modes, split)
	}
	for _, sup := range modes {
		t.Run(map[bool]string{true: "mount", false: "split"}[sup.MountNS], func(t *testing.T) {
			confinedWrites(t, sup)
		})
	}
}

func confinedWrites(t *testing.T, sup Support) {
	l := newLayout(t)
	script := `
w() { if (echo y > "$1") 2>/dev/null; then echo "$2 ok"; else echo "$2 denied"; fi; }
w src/a.txt src
w top.txt top
w new.txt new
w ` + l.scratch + `/tmp.txt scratch
w ` + l.record + `/events.jsonl record
w ` + l.record + `/forged record-new
w ` + l.outside + `/x outside
w /dev/null devnull
rm -f ` + l.record + `/events.jsonl 2>/dev/null; test -e ` + l.record + `/events.jsonl && echo "record-rm denied"
mv .obversa moved 2>/dev/null; test -d .obversa && echo "storage-mv denied"
cat ` + l.secret + `/key >/dev/null 2>&1 || echo "secret denied"
cat top.txt >/dev/null && echo "read ok"
`
	out, _ := shellOn(t, sup, l.spec(), l.ws, script)
	want := []string{"src ok", "top ok", "scratch ok", "record denied", "record-new denied", "outside denied",
		"devnull ok", "record-rm denied", "storage-mv denied", "secret denied", "read ok"}
	if sup.MountNS {
		want = append(want, "new ok")
	} else {
		want = append(want, "new denied")
	}
	for _, w := range want {
		if !strings.Contains(out, w+"\n") {
			t.Errorf("missing %q in:\n%s", w, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(l.record, "events.jsonl")); string(b) != "x\n" {
		t.Errorf("the record file was changed: %q", b)
	}
}

// TestConfinedNetwork connects to a loopback listener: denied without
// network (by TCP and by Multipath TCP), allowed with it.
func TestConfinedNetwork(t *testing.T) {
	needLandlock(t)
	port := testutil.Loopback(t)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash for /dev/tcp")
	}
	script := bash + ` -c 'exec 3<>/dev/tcp/127.0.0.1/` + strconv.Itoa(port) + `' 2>&1 && echo connected`
	for _, network := range []bool{false, true} {
		out, _ := shell(t, Spec{Network: network}, t.TempDir(), script)
		switch {
		case network && !strings.Contains(out, "connected"):
			t.Errorf("network = true: %s", out)
		case !network && (strings.Contains(out, "connected") || !strings.Contains(out, "Permission denied")):
			t.Errorf("network = false: want Permission denied, got %s", out)
		}
	}
	if py, err := exec.LookPath("python3"); err == nil {
		mptcp := py + ` -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262); s.connect(("127.0.0.1", ` + strconv.Itoa(port) + `)); print("connected")'`
		if out, _ := shell(t, Spec{}, t.TempDir(), mptcp); strings.Contains(out, "connected") {
			t.Errorf("Multipath TCP reached the listener without network: %s", out)
		}
	}
}

// TestConfinedMemory allocates past the limit: the kernel's OOM killer
// ends the command and the group counts it.
func TestConfinedMemory(t *testing.T) {
	if Detect().Cgroup.Memory == "" {
		t.Skipf("kernel: %s", Detect())
	}
	out, p := shell(t, Spec{MemoryBytes: 32 << 20}, t.TempDir(), `head -c 200000000 /dev/zero | tail -n 1 >/dev/null; echo "status $?"`)
	if strings.Contains(out, "status 0") || p.OOMKills() == 0 {
		t.Errorf("allocating 200 MB under a 32 MiB limit: %q, %d OOM kills", out, p.OOMKills())
	}
}

// TestMemoryGroupCarriesTheTag: a plugin's memory group is named with the
// launch's group tag, as a bare group is, so that the run's keeper finds
// it (plugin.StopTaggedGroups) — in every hierarchy it is made in — and
// with none without a tag.
func TestMemoryGroupCarriesTheTag(t *testing.T) {
	if Detect().Cgroup.Memory == "" {
		t.Skipf("kernel: %s", Detect())
	}
	for _, tag := range []string{"0123456789abcdef", ""} {
		p, err := Prepare(Spec{MemoryBytes: 32 << 20, GroupTag: tag}, Detect(), false)
		if err != nil {
			t.Fatal(err)
		}
		dirs := []string{p.group.V2, p.group.V1Memory}
		p.Release()
		made := 0
		for _, d := range dirs {
			if d == "" {
				continue
			}
			made++
			name := filepath.Base(d)
			if !strings.HasPrefix(name, TaggedPrefix(tag)) || tag == "" && strings.Count(name, "-") != strings.Count(GroupPrefix, "-") {
				t.Errorf("tag %q: memory group %s, want a name starting %q", tag, d, TaggedPrefix(tag))
			}
		}
		if made == 0 {
			t.Errorf("tag %q: no memory group made", tag)
		}
	}
}

// TestConfinedProcess checks the plugin's own process, as the shim leaves
// it: no_new_privs, the seccomp filter, CAP_SYS_ADMIN out of the bounding
// set where a mount namespace is used, and no descriptor but the standard
// streams, though the host holds one open without close-on-exec; a "#!"
// script, which keeps its own descriptor, still runs.
func TestConfinedProcess(t *testing.T) {
	sup := needLandlock(t)
	leak, err := syscall.Open(os.Args[0], syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(leak)
	l := newLayout(t)
	out, _ := shellOn(t, sup, l.spec(), l.ws, `echo fds; ls /proc/$$/fd; echo end; grep -E '^(NoNewPrivs|Seccomp|CapBnd):' /proc/$$/status`)
	status := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			status[k] = strings.TrimSpace(v)
		}
	}
	if !strings.Contains(out, "fds\n0\n1\n2\nend\n") {
		t.Errorf("the plugin holds descriptors beyond the standard streams (the host's %d among them?):\n%s", leak, out)
	}
	if status["NoNewPrivs"] != "1" || status["Seccomp"] != "2" {
		t.Errorf("no_new_privs or the seccomp filter missing:\n%s", out)
	}
	if capBnd, err := strconv.ParseUint(status["CapBnd"], 16, 64); err != nil || sup.MountNS && capBnd&(1<<21) != 0 {
		t.Errorf("CAP_SYS_ADMIN in the bounding set with a mount namespace (%v):\n%s", err, out)
	}

	script := filepath.Join(t.TempDir(), "plugin.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho script ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(script)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := Prepare(Spec{}, sup, false)
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := p.CommandFile(f, script, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cmd.CombinedOutput()
	for _, f := range cmd.ExtraFiles {
		f.Close()
	}
	if err != nil || string(b) != "script ran\n" {
		t.Errorf("a confined #! script: %v\n%s", err, b)
	}
}
