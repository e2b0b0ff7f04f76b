package closed

import "testing"

func TestIs(t *testing.T) {
	c := make(chan struct{})
	if Is(c) {
		t.Fatal("an open channel read as closed")
	}
	close(c)
	if !Is(c) {
		t.Fatal("a closed channel read as open")
	}
	var nilc chan struct{}
	if Is(nilc) {
		t.Fatal("a nil channel (never closed) read as closed")
	}
}
