#!/usr/bin/env bash
# The report of a 1,000-run experiment: `ceval report`'s write time (Go benchmark), the
# experiment page's size, and its load time in headless Chromium (Debian's chromium:
# --dump-dom returns after the page loaded and laid out) beside a one-line page loaded the
# same way in the same run (the browser's own start-up).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
GO=${GO:-go}
command -v chromium >/dev/null || { echo "bench-report: chromium is missing (apt-get install chromium)" >&2; exit 1; }
work=$(mktemp -d)
keep="$work/dir"
trap 'rm -rf "$work"; [ -s "$keep" ] && rm -rf "$(dirname "$(cat "$keep")")"' EXIT
out=$(CEVAL_BENCH_REPORT_KEEP="$keep" "$GO" test -run '^$' -bench 'ReportWrite1000Runs' -benchtime 3x -count=1 ./report/)
echo "$out"
exp=$(cat "$keep")
write_ms=$(echo "$out" | awk '$1 ~ /^BenchmarkReportWrite1000Runs/ { printf "%.0f", $3 / 1e6 }')
bytes=$(stat -c %s "$exp/report.html")
echo '<!DOCTYPE html><title>blank</title><p>blank' >"$work/blank.html"
load_ms() { # median of 3 loads of file $1, in ms
  local t=()
  for _ in 1 2 3; do
    local s e
    s=$(date +%s%N)
    chromium --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update \
      --disable-sync --no-first-run --disable-extensions --user-data-dir="$work/profile" --dump-dom "file://$1" >/dev/null 2>&1
    e=$(date +%s%N)
    t+=($(((e - s) / 1000000)))
  done
  median "${t[@]}"
}
page=$(load_ms "$exp/report.html")
blank=$(load_ms "$work/blank.html")
run=$(load_ms "$(dirname "$(find "$exp" -name transcript.html | head -1)")/transcript.html")
bench_row "report.html of 1,000 runs: size" "$((bytes / 1024))" "-" "-" KiB "<4096"
bench_row "ceval report of 1,000 runs (summary, page, 1,000 run pages)" "$write_ms" "-" "-" ms -
bench_row "report.html of 1,000 runs: load in headless Chromium" "$page" "a one-line page, same browser" "$blank" ms "+3000"
bench_row "one run's transcript.html: load in headless Chromium" "$run" "a one-line page, same browser" "$blank" ms "+1000"
