//go:build !unix

package regfile

// Map is Read on systems without mmap: the bytes are a copy, and unmap
// does nothing.
func Map(path string, max int64) (b []byte, unmap func(), err error) {
	b, err = Read(path, max)
	if err != nil {
		return nil, nil, err
	}
	return b, func() {}, nil
}
