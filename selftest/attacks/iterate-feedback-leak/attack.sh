. ./lib.sh
# Iteration 1 leaves an empty found.txt, so every criterion fails (the includes check with
# "missing <expected>") and iteration 2 gets the feedback.
if [ "$CEVAL_ITERATION" != 2 ]; then
	info "iteration ${CEVAL_ITERATION:-?}: failing on purpose to get the follow-up prompt"
	: >/workspace/found.txt
	exit 0
fi
attempt "read the follow-up prompt $CEVAL_PROMPT_FILE" cat "$CEVAL_PROMPT_FILE"
hunt_file "$CEVAL_PROMPT_FILE" /home/agent/.ceval/*
if grep -q "$P" "$FOUND" 2>/dev/null; then
	proof "the follow-up prompt holds the canary"
fi
report
