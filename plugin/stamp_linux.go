package plugin

import (
	"io/fs"
	"syscall"
)

// stampOf reads a FileStamp from st's stat_t.
func stampOf(st fs.FileInfo) (FileStamp, error) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return FileStamp{}, ErrNoStamp
	}
	return FileStamp{
		Dev: s.Dev, Ino: s.Ino, Size: s.Size, Mode: s.Mode, UID: s.Uid,
		MtimeNS: s.Mtim.Nano(), CtimeNS: s.Ctim.Nano(),
	}, nil
}
