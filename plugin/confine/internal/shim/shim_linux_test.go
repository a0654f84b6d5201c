package shim

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestConstants checks the constants this package spells out against
// golang.org/x/sys/unix, which it does not import.
func TestConstants(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"SYS_LANDLOCK_RESTRICT_SELF", sysLandlockRestrictSelf, unix.SYS_LANDLOCK_RESTRICT_SELF},
		{"SYS_CLOSE_RANGE", sysCloseRange, unix.SYS_CLOSE_RANGE},
		{"CLOSE_RANGE_CLOEXEC", closeRangeCloexec, unix.CLOSE_RANGE_CLOEXEC},
		{"PR_SET_NO_NEW_PRIVS", prSetNoNewPrivs, unix.PR_SET_NO_NEW_PRIVS},
		{"PR_CAPBSET_DROP", prCapbsetDrop, unix.PR_CAPBSET_DROP},
		{"PR_SET_SECCOMP", prSetSeccomp, unix.PR_SET_SECCOMP},
		{"SECCOMP_MODE_FILTER", seccompModeFilter, unix.SECCOMP_MODE_FILTER},
		{"SECCOMP_RET_ERRNO", seccompRetErrno, unix.SECCOMP_RET_ERRNO},
		{"SECCOMP_RET_ALLOW", seccompRetAllow, unix.SECCOMP_RET_ALLOW},
		{"CAP_SYS_ADMIN", capSysAdmin, unix.CAP_SYS_ADMIN},
		{"AUDIT_ARCH_X86_64", auditArchX86_64, unix.AUDIT_ARCH_X86_64},
		{"AUDIT_ARCH_AARCH64", auditArchAARCH64, unix.AUDIT_ARCH_AARCH64},
		{"IPPROTO_MPTCP", ipprotoMPTCP, unix.IPPROTO_MPTCP},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
}

// early are the only packages the shim may import (its non-test
// dependencies, however deep): the standard library's that nearly every
// package of the obversa binary needs as well, so the shim's init runs
// before those of gRPC, protobuf, HCL and the rest (the package comment).
// strings, fmt, encoding/json and golang.org/x/sys/unix would each move it
// after dozens of others.
var early = []string{
	"cmp", "errors", "internal/", "io", "io/fs", "iter", "math/bits", "os", "path",
	"runtime", "slices", "strconv", "sync", "sync/atomic", "syscall", "time",
	"unicode", "unicode/utf8", "unsafe",
}

func TestImportsOnlyEarlyPackages(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "os") {
		t.Fatalf("go list -deps printed %q", out)
	}
	for _, d := range deps {
		if d == "github.com/obversa/obversa/plugin/confine/internal/shim" {
			continue
		}
		ok := slices.ContainsFunc(early, func(p string) bool {
			return d == p || strings.HasSuffix(p, "/") && strings.HasPrefix(d, p)
		})
		if !ok {
			t.Errorf("the shim imports %s, which initialises late (docs/decisions.md, \"The shim starts before the host's packages initialise\")", d)
		}
	}
}
