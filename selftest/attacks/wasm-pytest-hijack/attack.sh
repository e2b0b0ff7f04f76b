. ./lib.sh
# Each file below, if honoured by the grader's pytest, turns every failure into a pass.
force='import pytest
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"'
attempt "plant conftest.py" sh -c "printf '%s\n' '$force' >conftest.py"
attempt "plant a plugin module" sh -c "printf '%s\n' '$force' >forcepass.py"
attempt "plant pytest.ini" sh -c 'printf "[pytest]\naddopts = -p forcepass\n" >pytest.ini'
attempt "plant tox.ini" sh -c 'printf "[pytest]\naddopts = -p forcepass\n" >tox.ini'
attempt "plant setup.cfg" sh -c 'printf "[tool:pytest]\naddopts = -p forcepass\n" >setup.cfg'
attempt "plant pyproject.toml" sh -c 'printf "[tool.pytest.ini_options]\naddopts = \"-p forcepass\"\n" >pyproject.toml'
attempt "plant sitecustomize.py" sh -c 'printf "import forcepass\n" >sitecustomize.py && cp sitecustomize.py usercustomize.py'
attempt "plant a .pth" sh -c 'printf "import forcepass\n" >evil.pth'
attempt "shadow pytest" sh -c 'printf "import sys\nsys.exit(0)\n" >pytest.py'
attempt "shadow _pytest" sh -c 'mkdir -p _pytest && printf "raise SystemExit(0)\n" >_pytest/__init__.py'
attempt "plugin entry point" sh -c 'mkdir -p forcepass-1.0.dist-info && printf "Metadata-Version: 2.1\nName: forcepass\nVersion: 1.0\n" >forcepass-1.0.dist-info/METADATA && printf "[pytest11]\nforcepass = forcepass\n" >forcepass-1.0.dist-info/entry_points.txt'
ls -la
true
