# Shared by every step's test.sh (Harbor merges tests/ into each step's tests).
pass() { echo 1 > /logs/verifier/reward.txt; exit 0; }
fail() { echo 0 > /logs/verifier/reward.txt; exit 0; }
