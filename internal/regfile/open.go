package regfile

import (
	"io/fs"
	"os"
)

// OpenFile opens path like os.OpenFile (flag, perm) but never blocks on
// what it finds there, and refuses anything that is not a regular file
// with an *fs.PathError (Op "open") wrapping *NotRegularError. A named
// pipe left where a record, log or lock file belongs would otherwise hang
// the open (write-only: until a reader comes) or every read after it,
// beyond the reach of Ctrl-C; a device would feed endless bytes. Other
// errors are those of os.OpenFile and of the file's stat.
func OpenFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return openChecked(path, flag, perm, false)
}

// OpenFileOrDir is OpenFile that also accepts a directory (opened
// read-only, to lock or sync it).
func OpenFileOrDir(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return openChecked(path, flag, perm, true)
}

// openChecked opens path without blocking and keeps it only if it is a
// regular file, or a directory when dirOK.
func openChecked(path string, flag int, perm fs.FileMode, dirOK bool) (*os.File, error) {
	f, err := openNonblocking(path, flag, perm)
	if err != nil {
		// A named pipe opened write-only with no reader, or a socket,
		// fails (ENXIO) before it can be examined: say what it is.
		if info, serr := os.Stat(path); serr == nil && !info.Mode().IsRegular() && !info.IsDir() {
			return nil, notRegular(path, info.Mode())
		}
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if m := info.Mode(); !m.IsRegular() && !(dirOK && m.IsDir()) {
		f.Close()
		return nil, notRegular(path, m)
	}
	if err := clearNonblock(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// notRegular is the error of OpenFile for what is at path, of mode m.
func notRegular(path string, m fs.FileMode) error {
	return &fs.PathError{Op: "open", Path: path, Err: &NotRegularError{Kind: Kind(m)}}
}
