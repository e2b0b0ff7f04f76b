package importer

import (
	"strings"

	"ceval.dev/ceval/internal/lazyregexp"
)

// A test.sh that runs its tests with a bare `pytest ...` or `python3 -m pytest ...` (no uvx,
// no uv run) is routed like the uvx call (tbpreamble.go): the call goes through ceval_pytest,
// which runs it as written when the image's python3 has pytest, and with ceval's own, lent
// read-only at $CEVAL_PYTEST, when it has none (through the shim's ceval_uvx).

// tbBarePytestCall is a pytest or python3 -m pytest command word, at a line's start or after
// ; & | ( ! if then else do time.
var tbBarePytestCall = lazyregexp.New(`(^|[;&|(!]\s*|\b(?:if|then|else|do|time)\s+)(pytest|python3\s+-m\s+pytest)(\s|$)`)

// tbBareShim follows the shim when test.sh has a bare pytest call.
const tbBareShim = `ceval_pytest() {
  # as written when the image's python3 has pytest, else ceval's lent one (ceval_uvx)
  if [ "$CEVAL_OFFLINE_PYTEST" = 1 ] || [ -z "$CEVAL_OFFLINE_PYTEST" ]; then command "$@"; return; fi
  ceval_uvx "$@"
}
`

// tbRouteBarePytest rewrites line's bare pytest calls to ceval_pytest; ok says whether it had any.
func tbRouteBarePytest(line string) (string, bool) {
	if strings.Contains(line, "#") || !tbBarePytestCall.MatchString(line) {
		return line, false
	}
	return tbBarePytestCall.ReplaceAllString(line, "${1}ceval_pytest ${2}${3}"), true
}
