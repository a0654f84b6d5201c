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
	tests := []struct {
		name  string
		extra map[string]string
		pass  []string
		has   []string
		lacks []string
	}{
		{"allow-list only", nil, nil, []string{"PATH=/usr/bin", "LC_ALL=C.UTF-8", OwnerEnv + "=sha256:abc"}, []string{"OBVERSA_TEST_SECRET=s3cret", "OBVERSA_TEST_PASSED=given"}},
		{"pass_env by name", nil, []string{"OBVERSA_TEST_PASSED", "OBVERSA_TEST_UNSET"}, []string{"OBVERSA_TEST_PASSED=given"}, []string{"OBVERSA_TEST_SECRET=s3cret", "OBVERSA_TEST_UNSET="}},
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
