"""Kernel rates the compute model prices beside cuBLAS GEMMs (docs/formulas.md §5.3, §5.6), measured through
PyTorch on one GPU: (1) a GEMM held for tens of seconds against the same GEMM in a short burst, with the SM
clock and power read every second (does the card hold its clock under sustained load?); (2) the fused
attention kernels (cuDNN and FlashAttention through scaled_dot_product_attention), causal, forward and
backward, at training shapes; (3) memory-bound kernels of a transformer layer (RMSNorm, SwiGLU, residual add,
FP8 cast) against a device copy. Prints CSV sections; writes nothing else.

Usage: python3 calibration/measure_kernels.py [--sustain-s 40]
"""
import argparse
import statistics
import threading
import time

import torch
import torch.nn.functional as F

try:
    import pynvml
except ImportError:  # the clock log is optional
    pynvml = None


def time_region(fn, samples=10, sample_s=20e-3):
    """Median seconds per call of fn over `samples` timed batches of about sample_s each (CUDA events)."""
    for _ in range(3):
        fn()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record(); fn(); stop.record(); stop.synchronize()
    inner = max(1, min(1000, int(sample_s / max(1e-7, start.elapsed_time(stop) * 1e-3)) + 1))
    per_call = []
    for _ in range(samples):
        start.record()
        for _ in range(inner):
            fn()
        stop.record(); stop.synchronize()
        per_call.append(start.elapsed_time(stop) * 1e-3 / inner)
    return statistics.median(per_call)


class clock_log:
    """SM clock (MHz) and power (W) read every 0.5 s on a thread while a region runs."""

    def __init__(self):
        self.rows, self.stop = [], threading.Event()
        self.handle = None
        if pynvml is not None:
            pynvml.nvmlInit()
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())

    def read(self):
        if self.handle is None:
            return (0, 0.0)
        return (pynvml.nvmlDeviceGetClockInfo(self.handle, pynvml.NVML_CLOCK_SM),
                pynvml.nvmlDeviceGetPowerUsage(self.handle) / 1000.0)

    def run(self):
        t0 = time.time()
        while not self.stop.wait(0.5):
            self.rows.append((time.time() - t0, *self.read()))


def sustained(name, fn, flops, seconds):
    """One line per second of a loop of fn: achieved TFLOP/s, SM clock and power."""
    log = clock_log()
    thread = threading.Thread(target=log.run, daemon=True)
    burst = flops / time_region(fn, samples=5, sample_s=10e-3) / 1e12
    print(f"{name},burst,0,{burst:.1f},{log.read()[0]},{log.read()[1]:.0f}")
    thread.start()
    t0 = time.time()
    second = 0
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    while time.time() - t0 < seconds:
        n = 0
        start.record()
        while True:
            for _ in range(20):
                fn()
            n += 20
            stop.record(); stop.synchronize()
            if start.elapsed_time(stop) > 1000:
                break
        second += 1
        rate = flops * n / (start.elapsed_time(stop) * 1e-3) / 1e12
        clock, power = log.read()
        print(f"{name},sustained,{second},{rate:.1f},{clock},{power:.0f}", flush=True)
    log.stop.set()
    thread.join()


def gemm_section(seconds):
    print("# section gemm_sustained: name,phase,second,tflops_per_s,sm_clock_mhz,power_w")
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    sustained("bf16_8192", lambda: a @ b, 2.0 * n ** 3, seconds)
    a8 = a.to(torch.float8_e4m3fn)
    b8 = b.t().contiguous().to(torch.float8_e4m3fn).t()  # column-major second operand, as _scaled_mm needs
    one = torch.ones((), device="cuda", dtype=torch.float32)
    fp8 = lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    sustained("fp8_8192", fp8, 2.0 * n ** 3, seconds / 2)


def attention_section():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    print("# section attention: backend,seq,heads_q,heads_kv,head_dim,fwd_s,bwd_s,fwd_tflops_per_s,bwd_tflops_per_s,"
          "causal_flops_fwd")
    for backend_name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        for seq, hq, hkv, d in ((2048, 32, 8, 128), (4096, 32, 8, 128), (8192, 32, 8, 128), (16384, 32, 8, 128),
                                (4096, 64, 8, 128), (8192, 16, 16, 128), (4096, 96, 8, 192)):
            try:
                q = torch.randn(1, hq, seq, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                k = torch.randn(1, hkv, seq, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                v = torch.randn(1, hkv, seq, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                with sdpa_kernel([backend]):
                    if hkv != hq:  # expanded K/V: the GQA kernels read each K/V head once per group anyway
                        k2 = k.repeat_interleave(hq // hkv, dim=1).detach().requires_grad_(True)
                        v2 = v.repeat_interleave(hq // hkv, dim=1).detach().requires_grad_(True)
                    else:
                        k2, v2 = k, v
                    out = F.scaled_dot_product_attention(q, k2, v2, is_causal=True)
                    grad = torch.randn_like(out)
                    fwd = time_region(lambda: F.scaled_dot_product_attention(q, k2, v2, is_causal=True), samples=7)
                    both = time_region(lambda: torch.autograd.grad(
                        F.scaled_dot_product_attention(q, k2, v2, is_causal=True), (q, k2, v2), grad), samples=7)
                # Causal: half the s×s square; forward 2 GEMMs (QKᵀ, PV), backward 5 (FlashAttention's count: 2.5×).
                flops_fwd = 0.5 * 4.0 * hq * seq * seq * d
                bwd = max(both - fwd, 1e-9)
                print(f"{backend_name},{seq},{hq},{hkv},{d},{fwd:.6e},{bwd:.6e},{flops_fwd / fwd / 1e12:.1f},"
                      f"{2.5 * flops_fwd / bwd / 1e12:.1f},{flops_fwd:.4e}", flush=True)
                del q, k, v, k2, v2, out, grad
            except Exception as e:  # a backend that does not take the shape: say so and go on
                print(f"{backend_name},{seq},{hq},{hkv},{d},error,{type(e).__name__}: {str(e)[:120]}", flush=True)


def attention_sustained_section(seconds):
    """cuDNN attention forward+backward held for `seconds` per shape, with the clock, as sustained() does."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    print("# section attention_sustained: name,phase,second,tflops_per_s,sm_clock_mhz,power_w "
          "(forward + backward, causal FLOPs: 3.5 × the forward's 0.5·4·h·s²·d)")
    for seq in (4096, 8192):
        hq, d = 32, 128
        q, k, v = (torch.randn(1, hq, seq, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                   for _ in range(3))
        grad = torch.randn(1, hq, seq, d, device="cuda", dtype=torch.bfloat16)
        flops = 3.5 * 0.5 * 4.0 * hq * seq * seq * d
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            step = lambda: torch.autograd.grad(F.scaled_dot_product_attention(q, k, v, is_causal=True), (q, k, v), grad)
            sustained(f"cudnn_fwd_bwd_{seq}", step, flops, seconds)


def memory_section():
    print("# section memory_bound: kernel,tokens,hidden,bytes_counted,seconds,gb_per_s")
    tokens, h, f = 8192, 4096, 14336
    x = torch.randn(tokens, h, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(tokens, h, device="cuda", dtype=torch.bfloat16)
    w = torch.ones(h, device="cuda", dtype=torch.bfloat16)
    gate = torch.randn(tokens, 2 * f, device="cuda", dtype=torch.bfloat16)
    big = torch.randn(256 * 2 ** 20, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(big)
    cases = (
        ("copy_512MiB", lambda: dst.copy_(big), 2 * big.numel() * 2),
        ("residual_add", lambda: torch.add(x, y), 3 * tokens * h * 2),
        ("rms_norm", lambda: F.rms_norm(x, (h,), w), 2 * tokens * h * 2),
        ("layer_norm", lambda: F.layer_norm(x, (h,)), 2 * tokens * h * 2),
        ("swiglu_eager", lambda: F.silu(gate[:, :f]) * gate[:, f:], 3 * tokens * f * 2),
        ("gelu", lambda: F.gelu(gate), 2 * tokens * 2 * f * 2),
        ("cast_fp8", lambda: x.to(torch.float8_e4m3fn), tokens * h * 3),
        ("transpose_copy", lambda: x.t().contiguous(), 2 * tokens * h * 2),
    )
    for name, fn, nbytes in cases:
        s = time_region(fn)
        print(f"{name},{tokens},{h},{nbytes},{s:.6e},{nbytes / s / 1e9:.1f}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sustain-s", type=float, default=40)
    parser.add_argument("--attention-sustain-s", type=float, default=0,
                        help="also hold cuDNN attention this long per shape (0: not)")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"# device {torch.cuda.get_device_name()} torch {torch.__version__} cudnn {torch.backends.cudnn.version()}")
    if args.attention_sustain_s > 0:
        attention_sustained_section(args.attention_sustain_s)
    memory_section()
    attention_section()
    gemm_section(args.sustain_s)


if __name__ == "__main__":
    main()
