#!/usr/bin/env bash
# Run a fuzz target once over files and folders (seeds, regressions): libFuzzer's replay mode. Each
# input must finish within 1 s and 1 GiB (issue 15's rule) and raise no sanitizer report.
set -euo pipefail
target=$1
shift
files=()
for p in "$@"; do
  if [[ -d $p ]]; then
    while IFS= read -r -d '' f; do files+=("$f"); done < <(find "$p" -type f -size -64k -print0)
  else
    files+=("$p")
  fi
done
((${#files[@]})) || { echo "no inputs"; exit 1; }
exec "$target" -timeout=1 -malloc_limit_mb=1024 -runs=1 "${files[@]}"
