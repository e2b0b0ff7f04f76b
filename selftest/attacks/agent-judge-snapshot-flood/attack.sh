. ./lib.sh
# An agent_judge's judge runs the agent's test script, as the rubric asks, in its own copy of
# the workspace. The script floods the directory a-results/ (which sorts before the verdict
# file) with 100,500 empty files: the judge's workspace passes the snapshot's entry cap of
# 100,000 before ceval-verdict.json, so the verdict the judge then writes is never captured.
# ceval must FAIL the criterion saying so (the agent's doing), neither ERROR nor the verdict.
attempt "leave run-tests.sh, which floods the judge's workspace past the snapshot's entry cap" sh -c "printf 'mkdir -p /workspace/a-results && cd /workspace/a-results && seq 1 100500 | xargs touch\n' >run-tests.sh && cat run-tests.sh"
true
