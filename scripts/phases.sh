# Sourced by setup.sh and test.sh: phase NAME appends "NAME<TAB>seconds since the last phase (or since sourcing)" to
# $PT2DIFF_PHASES and prints "--- NAME: N s" as the phase ends; python3 bench/test_time.py BUILD prints them all, and
# tests/suite_budget.py --measured BUILD holds them against the budget (docs/testing.md).
phase_start=$(date +%s.%N)
phase() {
  local now seconds; now=$(date +%s.%N)
  seconds=$(awk -v a="$now" -v b="$phase_start" 'BEGIN { printf "%.1f", a - b }')
  printf '%s\t%s\n' "$1" "$seconds" >> "$PT2DIFF_PHASES" 2>/dev/null || true
  printf -- '--- %s: %s s\n' "$1" "$seconds"
  phase_start=$now
}
