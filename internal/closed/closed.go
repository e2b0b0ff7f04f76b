// Package closed tells whether a done channel (one that is only ever closed, never sent on)
// has been closed, without blocking: the one home of an idiom the supervisor and the local
// sandbox both need.
package closed

// Is reports whether c is closed. c must be a channel that is only closed: a value sent on
// it would be consumed and read as closed.
func Is(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
