#!/usr/bin/env bash
# The shorter measurement of calibration/h200-sxm-141gb-2026-11-26 (the device tool's 10-minute call): build
# trainplan-bench with CUDA, then copies, the bf16/fp8 GEMM grid (the profile), one-rank NCCL and health,
# each output kept as it came. Run from the repository root with OUT set to the output folder:
#   OUT=/tmp/out bash calibration/measure_short.sh
# calibration/measure.sh is the longer one (the model-shape GEMMs and the PyTorch reference besides).
set -uo pipefail
o=$OUT; export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
t0=$SECONDS
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DTRAINPLAN_BUILD_TESTS=OFF -DTRAINPLAN_BUILD_PERF=OFF -DTRAINPLAN_BUILD_PYTHON=OFF -DTRAINPLAN_WITH_CUDA=ON > $o/cmake.log 2>&1 || { tail -40 $o/cmake.log; exit 1; }
cmake --build build-gpu -j16 --target trainplan-bench >> $o/cmake.log 2>&1 || { tail -40 $o/cmake.log; exit 1; }
echo "build $((SECONDS-t0)) s"
B=build-gpu/bin/trainplan-bench
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv > $o/nvidia-smi.csv 2>&1
r() { echo "== $*"; local t=$SECONDS; timeout 240 "$@"; echo "== exit $? after $((SECONDS-t)) s"; }
r $B memory > $o/memory.txt 2>&1
r $B calibrate --dtype bf16,fp8 --grid-min 512 --grid-max 16384 --samples 10 --algorithms 8 --calibration-out $o/profile.json > $o/calibrate.txt 2>&1
r mpirun -np 1 $B collectives --backend nccl --max-bytes 1G > $o/nccl-1rank.txt 2>&1
r mpirun -np 1 $B health --backend nccl > $o/health-1rank.txt 2>&1
echo "total $((SECONDS-t0)) s"; cat $o/nvidia-smi.csv; tail -3 $o/calibrate.txt; ls -la $o
