package store

import (
	"errors"

	"golang.org/x/sys/unix"
)

// writerMarkAt is the byte of events.jsonl whose open-file-description
// lock is the writer mark (File.WriterLock): far past any data a record
// holds, so that it guards nothing but the mark.
const writerMarkAt = 1 << 62

// WriterLock takes the writer mark as an open file description lock
// (fcntl F_OFD_SETLK, Linux 3.15) on one byte at writerMarkAt: like
// flock(2) it belongs to the open file and is released when the last
// descriptor of it closes (a killed process's too), and it does not
// interact with flock on a local file system. On NFS and SMB, where the
// kernel emulates flock with whole-file byte-range locks, the mark would
// conflict with the appenders' flock, so there it is unsupported.
func (f osFile) WriterLock(exclusive, wait bool) error {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return err
	}
	switch uint32(st.Type) {
	case unix.NFS_SUPER_MAGIC, unix.SMB_SUPER_MAGIC, unix.CIFS_SUPER_MAGIC, unix.SMB2_SUPER_MAGIC:
		return errors.ErrUnsupported
	}
	lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: 0, Start: writerMarkAt, Len: 1}
	if exclusive {
		lk.Type = unix.F_WRLCK
	}
	cmd := unix.F_OFD_SETLK
	if wait {
		cmd = unix.F_OFD_SETLKW
	}
	for {
		err := unix.FcntlFlock(f.Fd(), cmd, &lk)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN || err == unix.EACCES:
			return unix.EWOULDBLOCK
		case err == unix.EINVAL:
			return errors.ErrUnsupported // a kernel before OFD locks
		}
		return err
	}
}

// WriterUnlock releases the writer mark (F_UNLCK on its byte); releasing
// a mark this open file does not hold succeeds.
func (f osFile) WriterUnlock() error {
	lk := unix.Flock_t{Type: unix.F_UNLCK, Whence: 0, Start: writerMarkAt, Len: 1}
	for {
		err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
		if err != unix.EINTR {
			return err
		}
	}
}
