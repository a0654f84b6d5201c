package simfs

import (
	"io/fs"
	"path"
	"strings"
	"syscall"
	"time"
)

// lookup returns the inode at p (clean, absolute). The caller holds f.mu.
func (f *FS) lookup(p string) (*inode, error) {
	p = path.Clean(p)
	if !path.IsAbs(p) {
		return nil, syscall.EINVAL
	}
	n := f.root
	for _, el := range strings.Split(p, "/")[1:] {
		if el == "" {
			continue
		}
		if !n.dir {
			return nil, syscall.ENOTDIR
		}
		c, ok := n.entries[el]
		if !ok {
			return nil, syscall.ENOENT
		}
		n = c
	}
	return n, nil
}

// parent returns the directory holding p and p's last element. The caller
// holds f.mu.
func (f *FS) parent(p string) (*inode, string, error) {
	p = path.Clean(p)
	dir, name := path.Split(p)
	if name == "" {
		return nil, "", syscall.EEXIST // "/"
	}
	d, err := f.lookup(dir)
	if err != nil {
		return nil, "", err
	}
	if !d.dir {
		return nil, "", syscall.ENOTDIR
	}
	return d, name, nil
}

// Mkdir creates a directory; its entry is volatile until its parent is
// synced.
func (f *FS) Mkdir(name string, perm fs.FileMode) error {
	_, err := f.begin(OpMkdir, name)
	defer f.mu.Unlock()
	if err != nil {
		return err
	}
	d, el, err := f.parent(name)
	if err != nil {
		return pathErr(OpMkdir, name, err)
	}
	if _, ok := d.entries[el]; ok {
		return pathErr(OpMkdir, name, syscall.EEXIST)
	}
	d.entries[el] = newDir()
	return nil
}

// Remove removes a file or an empty directory (volatile until the parent
// is synced). Open handles keep the file.
func (f *FS) Remove(name string) error {
	_, err := f.begin(OpRemove, name)
	defer f.mu.Unlock()
	if err != nil {
		return err
	}
	d, el, err := f.parent(name)
	if err != nil {
		return pathErr(OpRemove, name, err)
	}
	n, ok := d.entries[el]
	if !ok {
		return pathErr(OpRemove, name, syscall.ENOENT)
	}
	if n.dir && len(n.entries) > 0 {
		return pathErr(OpRemove, name, syscall.ENOTEMPTY)
	}
	delete(d.entries, el)
	return nil
}

// Rename moves oldpath to newpath, replacing a file there (volatile until
// both directories are synced).
func (f *FS) Rename(oldpath, newpath string) error {
	_, err := f.begin(OpRename, newpath)
	defer f.mu.Unlock()
	if err != nil {
		return err
	}
	od, oel, err := f.parent(oldpath)
	if err != nil {
		return pathErr(OpRename, oldpath, err)
	}
	n, ok := od.entries[oel]
	if !ok {
		return pathErr(OpRename, oldpath, syscall.ENOENT)
	}
	nd, nel, err := f.parent(newpath)
	if err != nil {
		return pathErr(OpRename, newpath, err)
	}
	if old, ok := nd.entries[nel]; ok && old.dir {
		return pathErr(OpRename, newpath, syscall.EISDIR)
	}
	delete(od.entries, oel)
	nd.entries[nel] = n
	return nil
}

// Link makes newname another entry for oldname's file (volatile until the
// directory is synced).
func (f *FS) Link(oldname, newname string) error {
	_, err := f.begin(OpLink, newname)
	defer f.mu.Unlock()
	if err != nil {
		return err
	}
	n, err := f.lookup(oldname)
	if err != nil {
		return pathErr(OpLink, oldname, err)
	}
	if n.dir {
		return pathErr(OpLink, oldname, syscall.EPERM)
	}
	d, el, err := f.parent(newname)
	if err != nil {
		return pathErr(OpLink, newname, err)
	}
	if _, ok := d.entries[el]; ok {
		return pathErr(OpLink, newname, syscall.EEXIST)
	}
	d.entries[el] = n
	return nil
}

// Stat describes name.
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	_, err := f.begin(OpStat, name)
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	n, err := f.lookup(name)
	if err != nil {
		return nil, pathErr(OpStat, name, err)
	}
	return n.info(path.Base(path.Clean(name))), nil
}

// Lstat is Stat: there are no symbolic links.
func (f *FS) Lstat(name string) (fs.FileInfo, error) { return f.Stat(name) }

// ReadDir lists a directory's entries sorted by name.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	_, err := f.begin(OpReadDir, name)
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	d, err := f.lookup(name)
	if err != nil {
		return nil, pathErr(OpReadDir, name, err)
	}
	if !d.dir {
		return nil, pathErr(OpReadDir, name, syscall.ENOTDIR)
	}
	var out []fs.DirEntry
	for _, el := range sortedNames(d.entries) {
		out = append(out, fs.FileInfoToDirEntry(d.entries[el].info(el)))
	}
	return out, nil
}

// SyncDir makes a directory's entries durable.
func (f *FS) SyncDir(name string) error {
	_, err := f.begin(OpSyncDir, name)
	defer f.mu.Unlock()
	if err != nil {
		return err
	}
	d, err := f.lookup(name)
	if err != nil {
		return pathErr(OpSyncDir, name, err)
	}
	if !d.dir {
		return pathErr(OpSyncDir, name, syscall.ENOTDIR)
	}
	d.durableEntries = maps(d.entries)
	return nil
}

// info describes an inode.
func (n *inode) info(name string) fs.FileInfo {
	fi := fileInfo{name: name, size: int64(len(n.data)), mode: 0o644}
	if n.dir {
		fi.size, fi.mode = 0, fs.ModeDir|0o755
	}
	return fi
}

type fileInfo struct {
	name string
	size int64
	mode fs.FileMode
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) Mode() fs.FileMode  { return i.mode }
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return i.mode.IsDir() }
func (i fileInfo) Sys() any           { return nil }
