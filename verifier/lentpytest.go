package verifier

import "strings"

// lentPytestImport is the Python a pytest criterion's test process (pytestBoot, and
// isolatedBoot for isolation: process) runs to import pytest: the image's own when its
// python3 has one, else ceval's, lent read-only at HarborPytestPath (harborpytest.go) and
// appended last to sys.path, after every directory of the image's. When neither imports it
// says why on stderr, beginning with who (lentPytestNote finds the line), and exits 4.
func lentPytestImport(who string) string {
	return `try:
    import pytest
except ImportError:
    # the image's python3 has no pytest: ceval's own, lent read-only (harborpytest.go), last on sys.path
    lent = os.environ.get("` + HarborPytestEnv + `", "")
    if not lent:
        print("` + who + `the image's python3 has no pytest, and this host lends none (install python3-pytest on it: scripts/containerd.sh install), or give the image pytest (RUN apt-get install -y python3-pytest)", file=sys.stderr)
        sys.exit(4)
    sys.path.append(lent)
    try:
        import pytest
    except Exception as e:
        print("` + who + `the image's python3 %d.%d has no pytest, and ceval's (pytest 7.2.1, for python3 3.7 to 3.13) does not import in it: %r; give the image pytest (RUN apt-get install -y python3-pytest)" % (sys.version_info[0], sys.version_info[1], e), file=sys.stderr)
        sys.exit(4)
`
}

// plainPytestWho begins what a pytest criterion without isolation: process says it lacked.
const plainPytestWho = "pytest: "

// isolatedPytestWho begins what an isolation: process test process says it lacked.
const isolatedPytestWho = "isolation: process: "

// noPython3 is what a pytest criterion over an image without python3 is told to do: ceval
// lends pytest, never python3.
const noPython3 = "the image has no python3 (ceval lends pytest, not python3): give the criterion packages: [python3-pytest] or an image with python3"

// lentPytestNote is the last line of a test process's stderr in which it said, beginning
// with who, what it lacked (lentPytestImport), or "".
func lentPytestNote(stderr []byte, who string) string {
	lines := strings.Split(strings.TrimSpace(string(stderr)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, who) && strings.Contains(l, "pytest") {
			return l
		}
	}
	return ""
}
