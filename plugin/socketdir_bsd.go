//go:build unix && !linux

package plugin

import "os"

// eachNameBatch is how many entries eachName reads at a time.
const eachNameBatch = 128

// eachName calls fn with the name of every directory in dir, read in
// batches of eachNameBatch so a large directory is never held at once.
// fn may remove the entry it is given. Errors end the listing: a sweep
// tries again next time.
func eachName(dir string, fn func(name []byte)) {
	f, err := os.Open(dir)
	if err != nil {
		return
	}
	defer f.Close()
	for {
		entries, err := f.ReadDir(eachNameBatch)
		for _, e := range entries {
			if e.IsDir() {
				fn([]byte(e.Name()))
			}
		}
		if err != nil || len(entries) == 0 {
			return
		}
	}
}
