"""An independent timing of the same GEMMs: PyTorch's F.linear (cuBLASLt, heuristic first choice) on the
shapes trainplan-bench measured, to check the bench's harness (calibration/README.md). Prints CSV:
dtype,m,n,k,torch_tflops_per_s. Usage: python3 calibration/torch_reference.py"""
import statistics

import torch
import torch.nn.functional as F

SHAPES = [  # (m, n, k): C[m×n] = A[m×k]·B[k×n]
    (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (16384, 16384, 16384),
    (8192, 6144, 4096), (8192, 4096, 4096), (8192, 28672, 4096), (8192, 4096, 14336),
    (8192, 128256, 4096), (8192, 1280, 8192), (8192, 8192, 1024), (8192, 7168, 8192),
    (2048, 4608, 12288), (2048, 12288, 6144), (4096, 4096, 28672),
]


def time_linear(a, w, samples=10, sample_s=5e-3):
    for _ in range(5):
        F.linear(a, w)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record(); F.linear(a, w); stop.record(); stop.synchronize()
    inner = max(1, min(2000, int(sample_s / max(1e-7, start.elapsed_time(stop) * 1e-3)) + 1))
    per_call = []
    for _ in range(samples):
        start.record()
        for _ in range(inner):
            F.linear(a, w)
        stop.record(); stop.synchronize()
        per_call.append(start.elapsed_time(stop) * 1e-3 / inner)
    return statistics.median(per_call)


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(30):  # clocks up from idle
        x @ x
    torch.cuda.synchronize()
    print("dtype,m,n,k,torch_tflops_per_s")
    for m, n, k in SHAPES:
        a = torch.rand(m, k, device="cuda", dtype=torch.bfloat16) * 2 - 1
        w = torch.rand(n, k, device="cuda", dtype=torch.bfloat16) * 2 - 1
        s = time_linear(a, w)
        print(f"bf16,{m},{n},{k},{2.0 * m * n * k / s / 1e12:.1f}")
        del a, w


if __name__ == "__main__":
    main()
