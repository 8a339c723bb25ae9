#!/usr/bin/env bash
# How the profiles in calibration/ were measured: build trainplan-bench with CUDA on the GPU machine and
# run each measurement once. Usage: calibration/measure.sh OUTDIR. Every file it writes is kept as it came.
set -uo pipefail
out=${1:?usage: calibration/measure.sh OUTDIR}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DTRAINPLAN_BUILD_TESTS=OFF -DTRAINPLAN_BUILD_PERF=OFF \
  -DTRAINPLAN_WITH_CUDA=ON > "$out/cmake.log" 2>&1 || { cat "$out/cmake.log"; exit 1; }
cmake --build build-gpu -j"$(nproc)" --target trainplan trainplan-bench >> "$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
B=build-gpu/bin/trainplan-bench
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv; } > "$out/nvidia-smi.csv" 2>&1
run() { echo "== $*"; local t0=$SECONDS; "$@"; echo "== exit $? after $((SECONDS - t0)) s"; }
run $B memory > "$out/memory.txt" 2>&1
# The GEMM shapes of the models the validation tables use, at their published layouts (fwd, dgrad, wgrad).
run $B gemm --dtype bf16,fp8 --samples 10 -- --model llama3-8b --tp 1 --mbs 1 --seq-length 8192 --gbs 128 --num-gpus 8 --use-flash-attn > "$out/gemm-llama3-8b-tp1.txt" 2>&1
run $B gemm --dtype bf16,fp8 --samples 10 -- --model llama3-70b --tp 8 --mbs 1 --seq-length 8192 --gbs 128 --num-gpus 8 --use-flash-attn > "$out/gemm-llama3-70b-tp8.txt" 2>&1
run $B gemm --dtype bf16 --samples 10 -- --model gpt3-175b --tp 8 --pp 8 --mbs 1 --gbs 1536 --num-gpus 64 > "$out/gemm-gpt3-175b-tp8.txt" 2>&1
run $B gemm --dtype bf16 --samples 10 -- --preset bloom-176b-production > "$out/gemm-bloom-176b-tp4.txt" 2>&1
run $B gemm --dtype bf16 --samples 10 -- --model mixtral-8x7b --tp 1 --ep 8 --mbs 1 --gbs 256 --num-gpus 8 --use-flash-attn > "$out/gemm-mixtral-8x7b-ep8.txt" 2>&1
# The profile: grid (m, n, k = 512 … 16384) in bf16 and fp8, copies; then one-rank NCCL and health.
run $B calibrate --dtype bf16,fp8 --grid-min 512 --grid-max 16384 --samples 10 --algorithms 8 \
  --calibration-out "$out/profile.json" > "$out/calibrate.txt" 2>&1
run mpirun -np 1 $B collectives --backend nccl --max-bytes 1G > "$out/nccl-1rank.txt" 2>&1
run mpirun -np 1 $B health --backend nccl > "$out/health-1rank.txt" 2>&1
run $B gemm --dtype bf16 --samples 10 --shapes 2048x2048x2048,4096x4096x4096,8192x8192x8192,16384x16384x16384,8192x6144x4096,8192x4096x4096,8192x28672x4096,8192x4096x14336,8192x128256x4096,8192x1280x8192,8192x8192x1024,8192x7168x8192,2048x4608x12288,2048x12288x6144,4096x4096x28672 > "$out/gemm-reference-shapes.txt" 2>&1
run python3 calibration/torch_reference.py > "$out/torch-reference.csv" 2>&1
ls -la "$out"
