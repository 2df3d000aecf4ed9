#!/bin/sh
# Instructions per accepted action (valgrind's callgrind: deterministic, unlike CPU time on a
# shared machine): bench/action_path.py --actions run twice under callgrind, N and 3N measured
# actions after the same warm-up; (total(3N) - total(N)) / (actions(3N) - actions(N)) leaves
# start-up and warm-up out. Usage, from the repository root:
#   [PYTHON=...] bench/instructions_per_action.sh GAME [N] [action_path.py options, e.g. --servicers]
set -eu
game=$1; n=${2:-300}; shift; [ $# -gt 0 ] && shift
dir=$(mktemp -d)
run() {
  count=$1; shift
  valgrind --tool=callgrind --callgrind-out-file="$dir/cg.$count" "${PYTHON:-.venv/bin/python}" bench/action_path.py \
    --game "$game" --matches 16 --warmup-actions 300 --actions "$count" "$@" >"$dir/out.$count" 2>"$dir/err.$count"
}
first=$n; second=$((3 * n))
run "$first" "$@" & first_job=$!
run "$second" "$@" || { cat "$dir/err.$second" >&2; exit 1; }
wait "$first_job" || { cat "$dir/err.$first" >&2; exit 1; }
total() { sed -n 's/^==[0-9]*== Collected : //p' "$dir/err.$1"; }
actions() { sed -n 's/.* actions=\([0-9,]*\) .*/\1/p' "$dir/out.$1" | tr -d ,; }
echo "$game $* instructions_per_action=$(( ($(total $second) - $(total $first)) / ($(actions $second) - $(actions $first)) ))" \
  "(runs: $(actions $first) and $(actions $second) actions)"
rm -r "$dir"
