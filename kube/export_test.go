package kube

// ForceSPDY makes new port-forward connections skip the WebSocket tunnel, for tests of the
// SPDY path older API servers take.
func ForceSPDY(on bool) { forceSPDY = on }
