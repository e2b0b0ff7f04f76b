package gateway

import "ceval.dev/ceval/gateway/transcript"

// next returns the answer for a request with key k: a script's turn at that depth, or the
// matching recorded calls in order, the last one repeated (a CLI may retry); nil when none
// matches.
func (s *Server) next(k transcript.Key, model string, stream bool) *transcript.Call {
	if s.cfg.Fixture.Scripted() {
		return s.cfg.Fixture.ScriptAnswer(k, model, stream)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	idx := s.cfg.Fixture.Recorded(k)
	if len(idx) == 0 {
		return nil
	}
	i := min(s.replay[k], len(idx)-1)
	s.replay[k]++
	return &s.cfg.Fixture.Calls[idx[i]]
}
