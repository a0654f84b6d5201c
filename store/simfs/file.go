package simfs

import (
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/obversa/obversa/store"
)

// file is an open file (an open file description: its offset and lock).
type file struct {
	fs     *FS
	n      *inode
	name   string
	flag   int
	epoch  int
	off    int64
	closed bool
}

var _ store.File = (*file)(nil)

// OpenFile opens name like os.OpenFile. A file created here has a
// volatile entry (and size) until its directory (and it) are synced.
func (f *FS) OpenFile(name string, flag int, perm fs.FileMode) (store.File, error) {
	_, err := f.begin(OpOpen, name)
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	n, err := f.lookup(name)
	switch {
	case err == syscall.ENOENT && flag&os.O_CREATE != 0:
		d, el, perr := f.parent(name)
		if perr != nil {
			return nil, pathErr(OpOpen, name, perr)
		}
		n = &inode{}
		d.entries[el] = n
	case err != nil:
		return nil, pathErr(OpOpen, name, err)
	case flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		return nil, pathErr(OpOpen, name, syscall.EEXIST)
	case n.dir && flag&(os.O_WRONLY|os.O_RDWR) != 0:
		return nil, pathErr(OpOpen, name, syscall.EISDIR)
	}
	h := &file{fs: f, n: n, name: path.Clean(name), flag: flag, epoch: f.epoch}
	if flag&os.O_TRUNC != 0 && !n.dir {
		h.truncate(0)
	}
	return h, nil
}

// check returns the error of a handle that cannot be used. The caller
// holds fs.mu.
func (h *file) check(op Op) error {
	switch {
	case h.closed:
		return pathErr(op, h.name, os.ErrClosed)
	case h.epoch != h.fs.epoch:
		return pathErr(op, h.name, ErrCrashed)
	}
	return nil
}

// begin is FS.begin for the handle's path, also failing a closed or
// crashed handle. It returns with fs.mu held.
func (h *file) begin(op Op) (bool, error) {
	short, err := h.fs.begin(op, h.name)
	if err == nil {
		err = h.check(op)
	}
	return short, err
}

func (h *file) Name() string { return h.name }

func (h *file) Read(p []byte) (int, error) {
	_, err := h.begin(OpRead)
	defer h.fs.mu.Unlock()
	if err != nil {
		return 0, err
	}
	n, err := h.readAt(p, h.off)
	h.off += int64(n)
	return n, err
}

func (h *file) ReadAt(p []byte, off int64) (int, error) {
	_, err := h.begin(OpRead)
	defer h.fs.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return h.readAt(p, off)
}

func (h *file) readAt(p []byte, off int64) (int, error) {
	if h.n.dir {
		return 0, pathErr(OpRead, h.name, syscall.EISDIR)
	}
	if off < 0 {
		return 0, pathErr(OpRead, h.name, syscall.EINVAL)
	}
	if off >= int64(len(h.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, h.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Write writes at the offset (at the end with O_APPEND). A fault with
// Short writes half of p before failing.
func (h *file) Write(p []byte) (int, error) {
	short, err := h.begin(OpWrite)
	defer h.fs.mu.Unlock()
	if err == nil && h.flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		err = pathErr(OpWrite, h.name, syscall.EBADF)
	}
	if err != nil && !short {
		return 0, err
	}
	if err != nil && h.check(OpWrite) != nil {
		return 0, err
	}
	b := p
	if short {
		b = p[:len(p)/2]
	}
	off := h.off
	if h.flag&os.O_APPEND != 0 {
		off = int64(len(h.n.data))
	}
	c := change{off: off, data: append([]byte(nil), b...)}
	h.n.data = c.apply(h.n.data)
	h.n.pending = append(h.n.pending, c)
	h.off = off + int64(len(b))
	return len(b), err
}

// WriteAt writes p at off (pwrite), extending the file when it writes
// past the end; a handle opened O_APPEND refuses it, as package os does.
// A fault with Short writes half of p before failing.
func (h *file) WriteAt(p []byte, off int64) (int, error) {
	short, err := h.begin(OpWrite)
	defer h.fs.mu.Unlock()
	switch {
	case err != nil:
	case h.flag&(os.O_WRONLY|os.O_RDWR) == 0:
		err = pathErr(OpWrite, h.name, syscall.EBADF)
	case h.flag&os.O_APPEND != 0 || off < 0:
		err = pathErr(OpWrite, h.name, syscall.EINVAL)
	}
	if err != nil && (!short || h.check(OpWrite) != nil) {
		return 0, err
	}
	b := p
	if short {
		b = p[:len(p)/2]
	}
	c := change{off: off, data: append([]byte(nil), b...)}
	h.n.data = c.apply(h.n.data)
	h.n.pending = append(h.n.pending, c)
	return len(b), err
}

func (h *file) Truncate(size int64) error {
	_, err := h.begin(OpTruncate)
	defer h.fs.mu.Unlock()
	if err == nil && h.flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		err = pathErr(OpTruncate, h.name, syscall.EINVAL)
	}
	if err != nil {
		return err
	}
	h.truncate(size)
	return nil
}

func (h *file) truncate(size int64) {
	c := change{size: size, trunc: true}
	h.n.data = c.apply(h.n.data)
	h.n.pending = append(h.n.pending, c)
}

// Sync makes the file's bytes durable (for a directory: its entries).
func (h *file) Sync() error { return h.sync(OpSync) }

// Datasync makes the file's bytes durable.
func (h *file) Datasync() error { return h.sync(OpDatasync) }

func (h *file) sync(op Op) error {
	_, err := h.begin(op)
	defer h.fs.mu.Unlock()
	if err != nil {
		return err
	}
	if h.n.dir {
		h.n.durableEntries = maps(h.n.entries)
		return nil
	}
	h.n.durable = append([]byte(nil), h.n.data...)
	h.n.pending = nil
	return nil
}

func (h *file) Stat() (fs.FileInfo, error) {
	_, err := h.begin(OpStat)
	defer h.fs.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return h.n.info(path.Base(h.name)), nil
}

// Lock takes a flock-style lock belonging to this handle.
func (h *file) Lock(exclusive, wait bool) error {
	return h.lock(func(n *inode) *lockState { return &n.flock }, exclusive, wait)
}

// WriterLock takes the handle's writer mark, a lock apart from Lock's
// with the same semantics (store.File).
func (h *file) WriterLock(exclusive, wait bool) error {
	return h.lock(func(n *inode) *lockState { return &n.writers }, exclusive, wait)
}

// lock takes the lock of the handle's inode that which picks.
func (h *file) lock(which func(*inode) *lockState, exclusive, wait bool) error {
	_, err := h.begin(OpLock)
	defer h.fs.mu.Unlock()
	if err != nil {
		return err
	}
	l := which(h.n)
	for {
		if err := h.check(OpLock); err != nil {
			return err
		}
		free := l.exclusive == nil || l.exclusive == h
		if exclusive {
			for o := range l.shared {
				if o != h {
					free = false
				}
			}
		}
		if free {
			l.drop(h)
			if exclusive {
				l.exclusive = h
			} else {
				if l.shared == nil {
					l.shared = map[*file]bool{}
				}
				l.shared[h] = true
			}
			h.fs.cond.Broadcast()
			return nil
		}
		if !wait {
			return syscall.EWOULDBLOCK
		}
		h.fs.cond.Wait()
	}
}

// Unlock releases this handle's lock.
func (h *file) Unlock() error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.check(OpLock); err != nil {
		return err
	}
	h.n.flock.drop(h)
	h.fs.cond.Broadcast()
	return nil
}

// WriterUnlock releases this handle's writer mark (store.File).
func (h *file) WriterUnlock() error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.check(OpLock); err != nil {
		return err
	}
	h.n.writers.drop(h)
	h.fs.cond.Broadcast()
	return nil
}

// drop releases h's hold of l. The caller holds fs.mu and wakes waiters.
func (l *lockState) drop(h *file) {
	if l.exclusive == h {
		l.exclusive = nil
	}
	delete(l.shared, h)
}

// Close releases the handle and its lock. Closing a handle a crash
// invalidated succeeds.
func (h *file) Close() error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if h.closed {
		return pathErr("close", h.name, os.ErrClosed)
	}
	if h.epoch == h.fs.epoch {
		h.n.flock.drop(h)
		h.n.writers.drop(h)
		h.fs.cond.Broadcast()
	}
	h.closed = true
	return nil
}
