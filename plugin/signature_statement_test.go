package plugin_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/plugin"
)

var testDigest = strings.Repeat("0123456789abcdef", 4)

func TestStatementRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		st      plugin.Statement
		comment string
	}{
		{"full", plugin.Statement{Name: "cmd", Version: "0.1.0", Protocol: 1, OS: "linux", Arch: "amd64", SHA256: testDigest,
			File: "obversa-plugin-cmd", Timestamp: time.Unix(1767225600, 0).UTC()},
			"timestamp:1767225600\tfile:obversa-plugin-cmd\tobversa-plugin:cmd\tversion:0.1.0\tprotocol:1\tos:linux\tarch:amd64\tsha256:" + testDigest},
		{"minimal", plugin.Statement{Name: "x", Version: "v2+build.7", Protocol: 2, OS: "darwin", Arch: "arm64", SHA256: testDigest},
			"obversa-plugin:x\tversion:v2+build.7\tprotocol:2\tos:darwin\tarch:arm64\tsha256:" + testDigest},
		{"file with colon and space", plugin.Statement{Name: "x", Version: "1", Protocol: 1, OS: "linux", Arch: "arm64", SHA256: testDigest, File: "a b:c"},
			"file:a b:c\tobversa-plugin:x\tversion:1\tprotocol:1\tos:linux\tarch:arm64\tsha256:" + testDigest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.st.TrustedComment(); got != tt.comment {
				t.Errorf("TrustedComment = %q, want %q", got, tt.comment)
			}
			got, err := plugin.ParseStatement(tt.comment)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.st, got); diff != "" {
				t.Errorf("ParseStatement (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseStatementIgnoresUnknownFields(t *testing.T) {
	t.Parallel()
	got, err := plugin.ParseStatement("obversa-plugin:x\tversion:1\tprotocol:1\tos:linux\tarch:amd64\tsha256:" + testDigest + "\ttypes:engine,node")
	if err != nil || got.Name != "x" {
		t.Errorf("ParseStatement with an unknown field = %+v, %v", got, err)
	}
}

func TestParseStatementRejects(t *testing.T) {
	t.Parallel()
	good := map[string]string{"obversa-plugin": "x", "version": "1", "protocol": "1", "os": "linux", "arch": "amd64", "sha256": testDigest}
	order := []string{"obversa-plugin", "version", "protocol", "os", "arch", "sha256"}
	build := func(change map[string]string, drop string, extra string) string {
		var f []string
		for _, k := range order {
			if k == drop {
				continue
			}
			v := good[k]
			if c, ok := change[k]; ok {
				v = c
			}
			f = append(f, k+":"+v)
		}
		if extra != "" {
			f = append(f, extra)
		}
		return strings.Join(f, "\t")
	}
	tests := []struct{ name, comment string }{
		{"empty", ""},
		{"reference tool comment", "timestamp:1614549543\tfile:message.txt"},
		{"no sha256", build(nil, "sha256", "")},
		{"no name", build(nil, "obversa-plugin", "")},
		{"field without colon", build(nil, "", "garbage")},
		{"duplicate sha256", build(nil, "", "sha256:"+testDigest)},
		{"upper-case digest", build(map[string]string{"sha256": strings.ToUpper(testDigest)}, "", "")},
		{"short digest", build(map[string]string{"sha256": "abc"}, "", "")},
		{"name with dot", build(map[string]string{"obversa-plugin": "a.b"}, "", "")},
		{"name with slash", build(map[string]string{"obversa-plugin": "../x"}, "", "")},
		{"empty version", build(map[string]string{"version": ""}, "", "")},
		{"version with space", build(map[string]string{"version": "1 2"}, "", "")},
		{"protocol zero", build(map[string]string{"protocol": "0"}, "", "")},
		{"protocol with plus", build(map[string]string{"protocol": "+1"}, "", "")},
		{"os upper case", build(map[string]string{"os": "Linux"}, "", "")},
		{"arch empty", build(map[string]string{"arch": ""}, "", "")},
		{"negative timestamp", build(nil, "", "timestamp:-5")},
		{"timestamp with zero", build(nil, "", "timestamp:01")},
		{"empty file", build(nil, "", "file:")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if st, err := plugin.ParseStatement(tt.comment); !errors.Is(err, plugin.ErrStatement) {
				t.Errorf("ParseStatement(%q) = %+v, %v; want ErrStatement", tt.comment, st, err)
			}
		})
	}
}

func TestValidPluginName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{"cmd": true, "cmd-engine_2": true, "": false, "-x": false, "a.b": false, strings.Repeat("a", 129): false} {
		if got := plugin.ValidPluginName(name); got != want {
			t.Errorf("ValidPluginName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestParseChecksums(t *testing.T) {
	t.Parallel()
	upper := strings.ToUpper(testDigest)
	other := strings.Repeat("f", 64)
	tests := []struct {
		name string
		text string
		want map[string]string
	}{
		{"sha256sum text mode", testDigest + "  obversa-plugin-cmd\n" + other + "  README.md\n",
			map[string]string{"obversa-plugin-cmd": testDigest, "README.md": other}},
		{"binary mode and CRLF", testDigest + " *obversa-plugin-cmd\r\n", map[string]string{"obversa-plugin-cmd": testDigest}},
		{"BSD form", "SHA256 (obversa-plugin-cmd) = " + upper + "\n", map[string]string{"obversa-plugin-cmd": testDigest}},
		{"bare digest", testDigest + "\n", map[string]string{"": testDigest}},
		{"comments and blanks", "# release 1\n\n" + testDigest + "  a b\n", map[string]string{"a b": testDigest}},
		{"same entry twice", testDigest + "  x\n" + testDigest + "  x\n", map[string]string{"x": testDigest}},
		{"empty", "", map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := plugin.ParseChecksums([]byte(tt.text))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseChecksums (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseChecksumsRejects(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		"abc  x\n",
		testDigest + " x\n",
		testDigest + "\tx\n",
		testDigest + "  \n",
		strings.Repeat("g", 64) + "  x\n",
		"SHA256 (x) = abc\n",
		"SHA256 () = " + testDigest + "\n",
		"MD5 (x) = " + testDigest + "\n",
		testDigest + "  x\n" + strings.Repeat("f", 64) + "  x\n",
	} {
		if got, err := plugin.ParseChecksums([]byte(text)); !errors.Is(err, plugin.ErrChecksumFormat) {
			t.Errorf("ParseChecksums(%q) = %v, %v; want ErrChecksumFormat", text, got, err)
		}
	}
}
