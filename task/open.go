package task

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// readRegular reads name (through root when root is non-nil, else by path), capped at
// MaxTaskFileBytes, and only when it is a regular file: a FIFO would block the read forever,
// a device may act on open or never end. It stats first so nothing else is ever opened, opens
// without blocking (O_NONBLOCK) in case the entry was swapped since, and keeps the open file
// only if fstat shows the same regular file.
func readRegular(root *os.Root, name string) ([]byte, fs.FileInfo, error) {
	stat, open := os.Stat, func(flag int) (*os.File, error) { return os.OpenFile(name, flag, 0) }
	if root != nil {
		stat, open = root.Stat, func(flag int) (*os.File, error) { return root.OpenFile(name, flag, 0) }
	}
	before, err := stat(name)
	if err != nil {
		return nil, nil, err
	}
	if !before.Mode().IsRegular() {
		return nil, nil, notRegular(before)
	}
	f, err := open(os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() || !os.SameFile(before, fi) {
		return nil, nil, errors.New("the file changed while it was being opened")
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxTaskFileBytes+1))
	if err != nil {
		return nil, nil, err
	}
	if len(data) > MaxTaskFileBytes {
		return nil, nil, fmt.Errorf("larger than %d bytes", MaxTaskFileBytes)
	}
	return data, fi, nil
}

// notRegular says what kind of file fi is, for a refusal.
func notRegular(fi fs.FileInfo) error {
	kind := "not a regular file"
	switch m := fi.Mode(); {
	case m.IsDir():
		kind = "a directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "a FIFO"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	case m&fs.ModeDevice != 0:
		kind = "a device"
	}
	return fmt.Errorf("is %s, not a regular file", kind)
}

// hardLinks returns how many names fi's file has (1 when the platform does not say).
func hardLinks(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
