// Command ceval-mock is the static client of ceval's protected mocks. Bind-mounted read-only
// into the agent's container once per mocked tool (as /usr/local/bin/<tool>), it sends its
// argv, cwd and (capped) stdin to the host's mock server over /run/ceval/mock.sock, prints
// the answer's stdout and stderr and exits with its code. It holds no fixture data: the
// answers never exist in the container before a call returns them.
//
// Invoked under its own name, the first argument is the tool: `ceval-mock gh pr list`.
// CEVAL_MOCK_SOCKET overrides the socket path (tests).
package main
