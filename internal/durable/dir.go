package durable

import "os"

// SyncDir fsyncs the directory dir, so that the entries created, linked,
// renamed or removed in it survive a crash (a file's own fsync does not
// make its name durable). The error is the open's, the fsync's or the
// close's, as *os.PathError.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
