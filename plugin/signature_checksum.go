package plugin

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
)

// ParseChecksums decodes a SHA-256 checksum sidecar, the file a release
// publishes beside its binaries, into digests (lower-case hex) by file
// name. It reads the output of sha256sum ("<hex>  <name>", or
// "<hex> *<name>" in binary mode), the BSD form "SHA256 (<name>) = <hex>",
// and a single bare "<hex>" line, which describes the file the sidecar
// accompanies and is returned under the name "". Blank lines and lines
// starting with '#' are skipped. A malformed line, or a name listed twice
// with different digests, returns an error wrapping ErrChecksumFormat
// naming the line.
func ParseChecksums(text []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, sum, ok := checksumLine(line)
		if !ok {
			return nil, fmt.Errorf("%w: line %d: %q is neither \"<sha256>  <file>\" nor \"SHA256 (<file>) = <sha256>\"", ErrChecksumFormat, n, line)
		}
		if old, dup := out[name]; dup && old != sum {
			return nil, fmt.Errorf("%w: line %d: %q is listed twice with different digests", ErrChecksumFormat, n, name)
		}
		out[name] = sum
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrChecksumFormat, err)
	}
	return out, nil
}

// checksumLine parses one non-blank line.
func checksumLine(line string) (name, sum string, ok bool) {
	if rest, found := strings.CutPrefix(line, "SHA256 ("); found {
		i := strings.LastIndex(rest, ") = ")
		if i <= 0 {
			return "", "", false
		}
		name, sum = rest[:i], strings.ToLower(rest[i+len(") = "):])
		return name, sum, sha256Pattern().MatchString(sum)
	}
	if len(line) < 64 {
		return "", "", false
	}
	sum, rest := strings.ToLower(line[:64]), line[64:]
	if !sha256Pattern().MatchString(sum) {
		return "", "", false
	}
	switch {
	case rest == "":
		return "", sum, true
	case strings.HasPrefix(rest, "  "):
		name = rest[2:]
	case strings.HasPrefix(rest, " *"):
		name = rest[2:]
	default:
		return "", "", false
	}
	return name, sum, name != ""
}
