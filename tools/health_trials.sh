#!/usr/bin/env bash
# How often `trainplan-bench health` is right on this machine (issue 32): N runs under mpirun -np 2 with
# nothing slowed (each should exit 0) and N with rank 1 slowed by 20% (each should exit 1 naming rank 1).
# Usage: tools/health_trials.sh BUILD_DIR [N]   (run it on a quiet machine; it prints one line per run)
set -uo pipefail
build=$1
n=${2:-20}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
quiet_ok=0
slow_ok=0
for ((i = 1; i <= n; i++)); do
  out=$(mpirun -np 2 "$build/bin/trainplan-bench" health --backend mpi --json 2>/dev/null)
  status=$?
  [[ $status == 0 ]] && quiet_ok=$((quiet_ok + 1))
  echo "quiet $i: exit $status $(python3 -c 'import json,sys; d=json.load(sys.stdin); print([round(100*r["gemm_spread"],1) for r in d["ranks"]], [s["who"] for s in d["slow_gemm"] + d["slow_memory"]])' <<<"$out")"
done
for ((i = 1; i <= n; i++)); do
  out=$(mpirun -np 2 "$build/bin/trainplan-bench" health --backend mpi --inject-slowdown 1:1.2 --json 2>/dev/null)
  status=$?
  named=$(python3 -c 'import json,sys; d=json.load(sys.stdin); print(" ".join(s["who"].replace(" ", "_") + ":" + str(round(100*s["shortfall"],1)) for s in d["slow_gemm"]))' <<<"$out")
  [[ $status == 1 && $named == "n0_g1_(rank_1):"* && $named != *" "* ]] && slow_ok=$((slow_ok + 1))
  echo "slowed $i: exit $status named $named"
done
echo "quiet runs healthy: $quiet_ok of $n; slowed runs naming rank 1 alone: $slow_ok of $n"
