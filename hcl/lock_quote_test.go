package hcl

import (
	"bytes"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// encodeWithHCLWrite is EncodeLockFile as hclwrite renders it, which
// EncodeLockFile must match byte for byte.
func encodeWithHCLWrite(l *LockFile) []byte {
	plugins := append([]LockedPlugin(nil), l.Plugins...)
	sort.SliceStable(plugins, func(i, j int) bool { return plugins[i].Name < plugins[j].Name })
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	body.AppendUnstructuredTokens(hclwrite.Tokens{{Type: hclsyntax.TokenComment, Bytes: []byte(lockHeader + "\n")}})
	for _, p := range plugins {
		body.AppendNewline()
		blk := body.AppendNewBlock("plugin", []string{p.Name}).Body()
		blk.SetAttributeValue("path", cty.StringVal(p.Path))
		blk.SetAttributeValue("sha256", cty.StringVal(p.SHA256))
		if p.KeyID != "" {
			blk.SetAttributeValue("key_id", cty.StringVal(strings.ToUpper(p.KeyID)))
		}
		if p.Signature != "" {
			blk.SetAttributeValue("signature", cty.StringVal(p.Signature))
		}
	}
	return hclwrite.Format(f.Bytes())
}

func TestEncodeLockFileMatchesHCLWrite(t *testing.T) {
	t.Parallel()
	l := &LockFile{Plugins: []LockedPlugin{
		{Name: "z", Path: "dir with \"quotes\"\\ and ${x} %{y} $ % \t\r\n\x01\u200b\U000e0001 e\u0301", SHA256: testDigest},
		{Name: "a", Path: "bin/cmd-engine", SHA256: testDigest, KeyID: "5bad1e5aa1b2c3d4", Signature: "sha256:" + testDigest},
		{Name: "m", Path: "", SHA256: "", Signature: "s"},
	}}
	if got, want := EncodeLockFile(l), encodeWithHCLWrite(l); !bytes.Equal(got, want) {
		t.Errorf("EncodeLockFile:\n%s\nhclwrite:\n%s", got, want)
	}
}

func FuzzEncodeLockFileMatchesHCLWrite(f *testing.F) {
	f.Add("shell", "bin/cmd-engine", testDigest, "", "")
	f.Add("a.b-c", "${a}%{b}\"\\\n", "x", "abc", "sha256:0")
	f.Fuzz(func(t *testing.T, name, path, sum, key, sig string) {
		l := &LockFile{Plugins: []LockedPlugin{{Name: name, Path: path, SHA256: sum, KeyID: key, Signature: sig}}}
		if got, want := EncodeLockFile(l), encodeWithHCLWrite(l); !bytes.Equal(got, want) {
			t.Fatalf("EncodeLockFile:\n%q\nhclwrite:\n%q", got, want)
		}
	})
}
