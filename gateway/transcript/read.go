package transcript

import (
	"bufio"
	"bytes"
	"strings"
)

// MaxLineBytes bounds one line of a transcript as its readers take it (the gateway caps a
// call's record below it); a longer line is skipped and reported.
const MaxLineBytes = 64 << 20

// ReadLine reads one line of at most MaxLineBytes, trimmed; a longer one is consumed and
// reported (tooLong, no bytes).
func ReadLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > MaxLineBytes {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimSpace(buf), tooLong, err
	}
}

// SSEData yields the data of each server-sent event of a recorded streamed answer (its
// data: lines joined by newlines, as the event stream format defines).
func SSEData(body string, each func(data []byte)) {
	var cur []byte
	flush := func() {
		if len(cur) > 0 {
			each(cur)
		}
		cur = nil
	}
	for _, ln := range strings.Split(body, "\n") {
		ln = strings.TrimRight(ln, "\r")
		switch {
		case ln == "":
			flush()
		case strings.HasPrefix(ln, "data:"):
			d := strings.TrimPrefix(strings.TrimPrefix(ln, "data:"), " ")
			if len(cur) > 0 {
				cur = append(cur, '\n')
			}
			cur = append(cur, d...)
		}
	}
	flush()
}
