. ./lib.sh
# An agent_judge's judge runs the agent's test script, as the rubric asks. The script floods
# the judge's own directory (/judge, where its verdict goes) with a-results/ (which sorts
# before the verdict file) holding 100,500 empty files: the judge's directory passes the
# snapshot's entry cap of 100,000 before ceval-verdict.json, so the verdict the judge then
# writes is never captured.
# ceval must FAIL the criterion saying so (the agent's doing), neither ERROR nor the verdict.
attempt "leave run-tests.sh, which floods the judge's directory past the snapshot's entry cap" sh -c "printf 'mkdir -p /judge/a-results && cd /judge/a-results && seq 1 100500 | xargs touch\n' >run-tests.sh && cat run-tests.sh"
true
