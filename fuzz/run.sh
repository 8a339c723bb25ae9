#!/usr/bin/env bash
# Fuzz every target in fuzz/targets for SECONDS each (default 60), from its seed folders; new inputs go
# to a scratch corpus, crashes to fuzz/findings/<name>/. Usage: fuzz/run.sh BUILD_DIR [SECONDS] [NAME…]
# Exit status 1 when a target crashed, leaked, raised a sanitizer report, took > 1 s on one input or
# allocated > 1 GiB at once (the whole process may hold up to 2 GiB: corpus and ASan quarantine).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
seconds=${2:-60}
shift $(($# < 2 ? $# : 2))
only=("$@")
status=0
while read -r name source seeds; do
  [[ -z $name || $name == \#* ]] && continue
  if ((${#only[@]})) && [[ ! " ${only[*]} " == *" $name "* ]]; then continue; fi
  corpus=$(mktemp -d)
  findings=$root/fuzz/findings/$name
  mkdir -p "$findings"
  for s in $seeds; do
    [[ -e $root/$s ]] && find "$root/$s" -type f -size -64k -exec cp {} "$corpus/" \;
  done
  [[ -d $root/fuzz/regressions/$name ]] && cp "$root/fuzz/regressions/$name"/* "$corpus/" 2>/dev/null
  echo "== fuzz $name ($source) for $seconds s"
  if ! "$build/bin/fuzz_$source" "$corpus" -max_total_time="$seconds" -timeout=1 -malloc_limit_mb=1024 -rss_limit_mb=2048 -max_len=4096 \
       -artifact_prefix="$findings/" -print_final_stats=1 >"$findings/log.txt" 2>&1; then
    status=1
    echo "FAILED: see $findings/log.txt"; tail -30 "$findings/log.txt"
  fi
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|^#[0-9]+.*DONE" "$findings/log.txt" | tr '\n' ' '; echo
  rm -rf "$corpus"
done <"$root/fuzz/targets"
exit $status
