package kubeproto

import (
	"bytes"
	"errors"
	"io"
	"net"
	"path"
	"strings"
	"sync"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// DataChunk is the payload size senders use for FrameData, FrameStdout and FrameStderr.
const DataChunk = 64 << 10

// SendStream copies r to w as frames of type typ, DataChunk bytes at most each, each written
// under mu when mu is not nil (other writers share w); it sends no FrameEnd. It returns at
// r's EOF with nil, or with r's error or the first write error.
func SendStream(w io.Writer, mu sync.Locker, typ byte, r io.Reader) error {
	buf := make([]byte, DataChunk)
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			if mu != nil {
				mu.Lock()
			}
			err := WriteFrame(w, typ, buf[:n])
			if mu != nil {
				mu.Unlock()
			}
			if err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// TarName cleans a tar entry's name to a slash path relative to the stream's directory
// ("." for the directory itself); false when it is absolute, holds a NUL or leaves the
// directory. Both ends confine the streams they unpack by it.
func TarName(n string) (string, bool) {
	if n == "" || strings.HasPrefix(n, "/") || strings.ContainsRune(n, 0) {
		return "", false
	}
	c := path.Clean(n)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", false
	}
	return c, true
}

// Splice copies a to b and b to a until both directions end, then closes both. A direction
// that reaches EOF half-closes its destination (CloseWrite), so a peer that waits for the
// end of a request still gets its reply back; where the destination cannot half-close, or
// on an error in either direction, both are closed at once (nothing hangs on a peer that
// will never see the end).
func Splice(a, b net.Conn) {
	var once sync.Once
	closeBoth := func() { once.Do(func() { a.Close(); b.Close() }) }
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, err := io.Copy(dst, src)
		if err == nil || errors.Is(err, io.EOF) {
			if cw, ok := dst.(interface{ CloseWrite() error }); !ok || cw.CloseWrite() != nil {
				closeBoth()
			}
		} else {
			closeBoth()
		}
		done <- struct{}{}
	}
	go pipe(b, a)
	go pipe(a, b)
	<-done
	<-done
	closeBoth()
}
