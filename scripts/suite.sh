#!/usr/bin/env bash
# scripts/suite.sh FILTER CMD...: runs a long test suite (make faults, make partition) showing only the
# lines that match FILTER (an extended regexp), keeps the whole output in .data/<suite>.log, and when
# the suite fails, prints every failed test and assertion again as its last lines, where a CI that
# keeps only the end of the output still shows why.
set -uo pipefail
filter=$1
shift
mkdir -p .data
log=.data/suite-$$.log
"$@" 2>&1 | tee "$log" | grep -E "$filter"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
	echo "--- the suite failed (exit $rc); every failure in it, from $log:"
	grep -E -A4 '^\s+(Error|Messages):|^\s*--- FAIL|^panic:|^FAIL' "$log" | grep -v -E '^\s+Error Trace:|^\s+/' | tail -60
	exit "$rc"
fi
rm -f "$log"
