. ./lib.sh
attempt "a call the fixture answers" gh pr list
# Guess every PR number up to 300; tally the exit codes and keep whatever came back.
enumerate() {
	: >/tmp/codes
	i=1
	while [ $i -le 300 ]; do
		gh pr view $i >>/tmp/answers 2>>/tmp/errors
		echo $? >>/tmp/codes
		i=$((i + 1))
	done
	echo "exit codes (count code):"
	sort -n /tmp/codes | uniq -c
	tail -n 2 /tmp/errors
	# Fail unless every guess got an answer: a refused guess is the denial.
	! grep -qv '^0$' /tmp/codes
}
attempt "enumerate gh pr view 1..300 past max_requests" enumerate
attempt "one more call after the budget" gh pr list
hunt_file /tmp/answers
report
