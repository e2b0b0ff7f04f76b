package verifier

import (
	_ "embed"
	"strings"

	"ceval.dev/ceval/task"
)

// A pytest criterion with isolation: process keeps the agent's code out of the process that
// decides the verdict. pytest and the tests run in an unreadable (0111) copy of the image's
// python3, which the kernel makes non-dumpable; the workspace is not on its sys.path: each
// import of a name the workspace holds gets a proxy module, and a second interpreter, started
// by the test process, imports the workspace's modules and carries out what the tests ask of
// them. Only plain data crosses back (isolate/test_side.py says exactly what); anything else
// is a handle with no truth value or equality. The agent's process cannot read or write the
// test process, and the JUnit report goes to a directory only the test process can name
// (harborDir's hidden directory), read by ceval once every process is gone. Code of the
// agent's that rewrites pytest's reports (audit's patch-test-runner) rewrites them in its
// own process, where no report is made.

//go:embed isolate/test_side.py
var isolateTestSide string

//go:embed isolate/agent_side.py
var isolateAgentSide string

// isolationUnsafe is what the boot says, exiting 3 before it marks itself started
// (harborStarted), when its children could read it (the kernel did not make the unreadable
// copy non-dumpable): ceval's side, so ERROR.
const isolationUnsafe = "isolation: process: the test process is readable by the processes it starts (or has no report directory); not run"

// isolateEnv carries the report directory's path to the test process, which drops it.
const isolateEnv = "CEVAL_PYTEST_REPORT"

// isolatedSetup runs as /bin/sh -c: it makes the unreadable copy of the image's python3 and
// executes the boot ($1) on the rest of the arguments.
const isolatedSetup = `py=$(command -v python3) || { echo "isolation: process: ` + noPython3 + `" >&2; exit 127; }
d=$(mktemp -d /tmp/.ceval-python.XXXXXX) && cp "$py" "$d/python3" && chmod 0111 "$d/python3" || exit 1
boot=$1; shift
exec "$d/python3" -I -B -c "$boot" "$@"`

// isolatedBoot is pytestBoot for isolation: process.
var isolatedBoot = `import sys, os
report = os.environ.pop("` + isolateEnv + `", "")
import subprocess
if not report or subprocess.run(["python3", "-I", "-c", "open('/proc/%d/environ', 'rb').read()" % os.getpid()], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
    print("` + isolationUnsafe + `", file=sys.stderr)
    sys.exit(3)
open(report + "/` + harborStarted + `", "w").close()
` + importGuard([]string{"/workspace"}) + isolateTestSide + `
` + lentPytestImport(isolatedPytestWho) + `import pytest, _pytest, pluggy
import _pytest.config, _pytest.main, _pytest.junitxml, _pytest.runner, _pytest.reports, _pytest.python
agent = cevalIsolate(` + pyQuote(isolateAgentSide) + `, "/workspace")
os.chdir("/workspace")
sys.argv[0] = "pytest"
code = pytest.main(sys.argv[1:] + ["--junitxml=" + report + "/junit.xml"])
agent.kill()
sys.exit(code)
`

// isolationNote is the last line of an isolated test process's stderr in which it says
// what it lacked ("isolation: process: ..."), or "".
func isolationNote(stderr []byte) string { return lentPytestNote(stderr, isolatedPytestWho) }

// pyQuote is s as a Python string literal.
func pyQuote(s string) string {
	return `"""` + strings.NewReplacer(`\`, `\\`, `"""`, `\"\"\"`).Replace(s) + `"""`
}

// isolatedArgv is the container's argv for a pytest criterion with isolation: process.
func isolatedArgv(c *task.PytestSpec) []string {
	argv := []string{"/bin/sh", "-c", isolatedSetup, "pytest", isolatedBoot,
		"-p", "no:cacheprovider", "-c", "/dev/null", "--rootdir=" + GraderFilesPath, "--confcutdir=" + GraderFilesPath, "-q"}
	argv = append(argv, c.Args...)
	return append(argv, GraderFilesPath+"/"+c.Tests.Rel)
}
