#!/usr/bin/env bash
# How often `trainplan-bench health` is right on this machine (issue 32), for two launches of 2 ranks:
#   together: mpirun -np 2 (each rank bound to its own core, probing at once: a user's launch);
#   one-core: taskset -c 0 mpirun --bind-to none -np 2 ... --serial (both ranks on one core, in turn: the tests').
# For each, N runs with nothing slowed (each should exit 0) and N with rank 1 slowed by 20% (each should
# exit 1 naming rank 1, by either probe, and no other rank).
# Usage: tools/health_trials.sh BUILD_DIR [N]   (run it on a quiet machine; it prints one line per run)
set -uo pipefail
build=$1
n=${2:-20}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
bench=("$build/bin/trainplan-bench" health --backend mpi --json)
summary() {
  python3 -c 'import json,sys; d=json.load(sys.stdin); print([round(100*r["gemm_spread"],1) for r in d["ranks"]], " ".join(s["who"].replace(" ", "_") + ":" + str(round(100*s["shortfall"],1)) for s in d["slow_gemm"] + d["slow_memory"]))'
}
trials() {  # LABEL LAUNCH... -- EXTRA...
  local label=$1
  shift
  local launch=()
  while [[ $1 != -- ]]; do launch+=("$1"); shift; done
  shift
  local quiet_ok=0 slow_ok=0 gemm_ok=0 i out status named
  for ((i = 1; i <= n; i++)); do
    out=$("${launch[@]}" "${bench[@]}" "$@" 2>/dev/null)
    status=$?
    [[ $status == 0 ]] && quiet_ok=$((quiet_ok + 1))
    echo "$label quiet $i: exit $status $(summary <<<"$out")"
  done
  for ((i = 1; i <= n; i++)); do
    out=$("${launch[@]}" "${bench[@]}" "$@" --inject-slowdown 1:1.2 2>/dev/null)
    status=$?
    # right: rank 1 named by either probe (both are slowed) and no other rank by any; GEMM: by the GEMM probe
    named=$(python3 -c 'import json,sys; d=json.load(sys.stdin); print(" ".join(s["who"].replace(" ", "_") + ":" + str(round(100*s["shortfall"],1)) for s in d["slow_gemm"]), "|", " ".join(s["who"].replace(" ", "_") for s in d["slow_memory"]))' <<<"$out")
    [[ $status == 1 && $named =~ ^(n0_g1_\(rank_1\):[0-9.]+)?\ \|\ ?(n0_g1_\(rank_1\))?$ && $named != " | " && $named != " |" ]] && slow_ok=$((slow_ok + 1))
    [[ $status == 1 && $named =~ ^n0_g1_\(rank_1\):[0-9.]+\ \|\ ?(n0_g1_\(rank_1\))?$ ]] && gemm_ok=$((gemm_ok + 1))
    echo "$label slowed $i: exit $status named $named"
  done
  echo "$label: quiet runs healthy: $quiet_ok of $n; slowed runs naming rank 1 and no other: $slow_ok of $n (by the GEMM probe: $gemm_ok)"
}
trials together mpirun -np 2 --
trials one-core taskset -c 0 mpirun --bind-to none -np 2 -- --serial
