# Sourced by setup.sh and test.sh: phase NAME appends "NAME<TAB>seconds since the last phase (or since
# sourcing)" to $PT2DIFF_PHASES; python3 bench/test_time.py BUILD prints them (docs/testing.md).
phase_start=$(date +%s.%N)
phase() {
  local now; now=$(date +%s.%N)
  awk -v n="$1" -v a="$now" -v b="$phase_start" 'BEGIN { printf "%s\t%.1f\n", n, a - b }' >> "$PT2DIFF_PHASES" 2>/dev/null || true
  phase_start=$now
}
