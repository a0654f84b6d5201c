package launch

import (
	"slices"
	"testing"
)

func TestEnvAllowList(t *testing.T) {
	t.Setenv("PATH", "/usr/bin")
	t.Setenv("LC_ALL", "C.UTF-8")
	t.Setenv("OBVERSA_TEST_SECRET", "s3cret")
	t.Setenv("OBVERSA_TEST_PASSED", "given")
	t.Setenv(OwnerEnv, "sha256:abc")
	// The Go runtime's variables are no exception to the allow-list
	// (docs/decisions.md, "Go runtime variables reach a plugin as any
	// other variable does").
	t.Setenv("GOMAXPROCS", "3")
	t.Setenv("GOGC", "off")
	t.Setenv("GOMEMLIMIT", "1GiB")
	tests := []struct {
		name  string
		extra map[string]string
		pass  []string
		has   []string
		lacks []string
	}{
		{"allow-list only", nil, nil, []string{"PATH=/usr/bin", "LC_ALL=C.UTF-8", OwnerEnv + "=sha256:abc"}, []string{"OBVERSA_TEST_SECRET=s3cret", "OBVERSA_TEST_PASSED=given"}},
		{"pass_env by name", nil, []string{"OBVERSA_TEST_PASSED", "OBVERSA_TEST_UNSET"}, []string{"OBVERSA_TEST_PASSED=given"}, []string{"OBVERSA_TEST_SECRET=s3cret", "OBVERSA_TEST_UNSET="}},
		{"go runtime variables stay with the host", nil, nil, nil, []string{"GOMAXPROCS=3", "GOGC=off", "GOMEMLIMIT=1GiB"}},
		{"go runtime variables by env", map[string]string{"GOMAXPROCS": "2"}, nil, []string{"GOMAXPROCS=2"}, []string{"GOMAXPROCS=3", "GOGC=off"}},
		{"go runtime variables by pass_env", nil, []string{"GOMAXPROCS"}, []string{"GOMAXPROCS=3"}, []string{"GOGC=off", "GOMEMLIMIT=1GiB"}},
		{"env overrides", map[string]string{"PATH": "/opt/bin", "MODE": "x"}, nil, []string{"PATH=/opt/bin", "MODE=x"}, []string{"PATH=/usr/bin"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := Env(tt.extra, tt.pass...)
			if !slices.IsSorted(env) {
				t.Errorf("environment not sorted: %v", env)
			}
			for _, kv := range tt.has {
				if !slices.Contains(env, kv) {
					t.Errorf("missing %s in %v", kv, env)
				}
			}
			for _, kv := range tt.lacks {
				if slices.Contains(env, kv) {
					t.Errorf("unexpected %s", kv)
				}
			}
		})
	}
}
