// Package mockd owns protected mocks: the fixture format, argv matching, the host-side server
// that answers an agent's tool calls on a Unix socket (serving only the agent's UID, as its
// container's user namespace maps it, with caps on request size, connections, time and calls)
// and the call log it writes. The versioned wire protocol is package mockd/wire, the only code
// the static client shares with the server. mockd runs in ceval's trust domain and never
// inside the agent's container: only the socket and the static client (embedded
// in package internal/embedded) are visible there.
package mockd
