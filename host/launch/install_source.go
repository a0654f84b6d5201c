package launch

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/obversa/obversa/plugin"
)

// dirFiles lists the regular files of a directory, two levels deep.
// Links and other non-regular files are skipped.
func dirFiles(dir string) ([]sourceFile, error) {
	var out []sourceFile
	var walk func(rel string, depth int) error
	walk = func(rel string, depth int) error {
		entries, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return err
		}
		for _, e := range entries {
			name := path.Join(rel, e.Name())
			switch {
			case e.IsDir() && depth == 0:
				if err := walk(name, 1); err != nil {
					return err
				}
			case e.Type().IsRegular():
				info, err := e.Info()
				if err != nil {
					return err
				}
				full := filepath.Join(dir, filepath.FromSlash(name))
				out = append(out, sourceFile{name: name, size: info.Size(), open: func() (io.ReadCloser, error) { return os.Open(full) }})
			}
		}
		return nil
	}
	return out, walk("", 0)
}

// cleanName checks an archive member's name: relative, no "..", no
// backslashes; it returns the cleaned slash path.
func cleanName(name string) (string, error) {
	clean := path.Clean(strings.TrimPrefix(name, "./"))
	if name == "" || path.IsAbs(name) || strings.Contains(name, `\`) || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%w: archive member %q leaves the archive", ErrInstall, name)
	}
	return clean, nil
}

// tarFiles lists the regular files of a tar archive. A tar archive is
// read once, so the members are buffered: small ones in memory, others in
// temporary files under tmp (bounded by MaxBinaryBytes each).
func tarFiles(src string, gz bool, tmp string) ([]sourceFile, error) {
	f, err := os.Open(src)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if gz {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInstall, src, err)
		}
		defer zr.Close()
		r = zr
	}
	tr := tar.NewReader(r)
	var out []sourceFile
	for i := 0; ; i++ {
		h, err := tr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInstall, src, err)
		}
		name, err := cleanName(h.Name)
		if err != nil {
			return nil, err
		}
		switch h.Typeflag {
		case tar.TypeReg:
		case tar.TypeDir:
			continue
		default:
			return nil, fmt.Errorf("%w: archive member %q is not a regular file or directory (links are refused)", ErrInstall, h.Name)
		}
		if strings.Count(name, "/") > 1 || !mayBeWanted(path.Base(name)) {
			// Listed so that it is reported as ignored; never read.
			out = append(out, sourceFile{name: name, size: h.Size})
			continue
		}
		if h.Size > MaxBinaryBytes {
			return nil, fmt.Errorf("%w: %s is %d bytes, more than the %d allowed", ErrInstall, h.Name, h.Size, int64(MaxBinaryBytes))
		}
		if h.Size <= maxSidecarBytes {
			b, err := io.ReadAll(io.LimitReader(tr, maxSidecarBytes+1))
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %v", ErrInstall, h.Name, err)
			}
			out = append(out, sourceFile{name: name, size: int64(len(b)), open: func() (io.ReadCloser, error) {
				return io.NopCloser(bytes.NewReader(b)), nil
			}})
			continue
		}
		spool := filepath.Join(tmp, fmt.Sprintf(".member-%d", i))
		w, err := os.OpenFile(spool, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, err
		}
		n, err := io.Copy(w, io.LimitReader(tr, MaxBinaryBytes+1))
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInstall, h.Name, err)
		}
		out = append(out, sourceFile{name: name, size: n, open: func() (io.ReadCloser, error) { return os.Open(spool) }})
	}
}

// zipFiles lists the regular files of a zip archive; the returned func
// closes it once the files have been read.
func zipFiles(src string) ([]sourceFile, func() error, error) {
	zr, err := zip.OpenReader(src)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrInstall, src, err)
	}
	var out []sourceFile
	for _, zf := range zr.File {
		name, err := cleanName(zf.Name)
		if err != nil {
			zr.Close()
			return nil, nil, err
		}
		mode := zf.Mode()
		switch {
		case mode.IsDir():
			continue
		case !mode.IsRegular():
			zr.Close()
			return nil, nil, fmt.Errorf("%w: archive member %q is not a regular file or directory (links are refused)", ErrInstall, zf.Name)
		}
		out = append(out, sourceFile{name: name, size: int64(zf.UncompressedSize64), open: zf.Open})
	}
	return out, zr.Close, nil
}

// mayBeWanted reports whether a file's base name could be a plugin binary
// or one of its sidecars, so that an archive member is worth reading.
func mayBeWanted(base string) bool {
	if base == checksumsFile {
		return true
	}
	for _, suffix := range []string{plugin.SignatureSuffix, ".sha256"} {
		base = strings.TrimSuffix(base, suffix)
	}
	_, ok := PluginNameFromFile(base)
	return ok
}
