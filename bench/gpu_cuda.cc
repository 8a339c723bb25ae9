// GPU measurements with the CUDA runtime, cuBLASLt and cuBLAS (docs/bench.md "GEMM" and "Memory").
// Host code only: no kernels of our own, so no nvcc is needed.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "bench_stats.h"
#include "gpu.h"
#include "trainplan/error.h"

namespace trainplan::bench {

namespace {

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(e)));
}
void blas_ok(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(fmt::format("{}: cuBLAS status {}", what, static_cast<int>(s)));
}
#define CUDA_OK(x) cuda_ok((x), #x)
#define BLAS_OK(x) blas_ok((x), #x)

/// cuBLASLt types of one precision (A and B; C and D; compute; scale), as Transformer Engine uses them.
struct lt_types {
  cudaDataType_t ab;
  cudaDataType_t cd;
  cublasComputeType_t compute;
  int ab_bytes;
  int cd_bytes;
};
lt_types types_of(dtype d) {
  switch (d) {
    case dtype::bf16: return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2};
    case dtype::fp16: return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 2};
    case dtype::tf32: return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4};
    case dtype::fp32: return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4, 4};
    case dtype::fp8: return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1, 2};
  }
  return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2};
}

/// Random finite values of magnitude ≤ 1 as bit patterns of `d` (random data: zeros run faster).
std::vector<unsigned char> random_pattern(dtype d, std::size_t bytes, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> out(bytes);
  auto put16 = [&](std::size_t i, std::uint16_t v) { std::memcpy(&out[i], &v, 2); };
  switch (d) {
    case dtype::bf16:  // sign | exponent 120..126 | 7 random mantissa bits
      for (std::size_t i = 0; i + 1 < bytes; i += 2)
        put16(i, static_cast<std::uint16_t>(((rng() & 1u) << 15) | ((120u + rng() % 7) << 7) | (rng() & 0x7Fu)));
      break;
    case dtype::fp16:  // exponent 10..14 of bias 15
      for (std::size_t i = 0; i + 1 < bytes; i += 2)
        put16(i, static_cast<std::uint16_t>(((rng() & 1u) << 15) | ((10u + rng() % 5) << 10) | (rng() & 0x3FFu)));
      break;
    case dtype::fp8:  // e4m3: exponent 3..7 of bias 7, never the NaN pattern
      for (std::size_t i = 0; i < bytes; ++i)
        out[i] = static_cast<unsigned char>(((rng() & 1u) << 7) | ((3u + rng() % 5) << 3) | (rng() & 7u));
      break;
    case dtype::fp32:
    case dtype::tf32: {
      std::uniform_real_distribution<float> u(-1.f, 1.f);
      for (std::size_t i = 0; i + 3 < bytes; i += 4) {
        const float f = u(rng);
        std::memcpy(&out[i], &f, 4);
      }
      break;
    }
  }
  return out;
}

void fill_random(void* dev, std::size_t bytes, dtype d, std::uint32_t seed) {
  constexpr std::size_t kChunk = 16u << 20;
  const std::vector<unsigned char> pattern = random_pattern(d, std::min(bytes, kChunk), seed);
  for (std::size_t off = 0; off < bytes; off += pattern.size()) {
    CUDA_OK(cudaMemcpy(static_cast<char*>(dev) + off, pattern.data(), std::min(pattern.size(), bytes - off),
                       cudaMemcpyHostToDevice));
  }
}

/// A device allocation freed on scope exit.
struct device_buffer {
  void* p = nullptr;
  std::size_t bytes = 0;
  explicit device_buffer(std::size_t n) : bytes(n) { CUDA_OK(cudaMalloc(&p, std::max<std::size_t>(n, 256))); }
  ~device_buffer() { cudaFree(p); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
};

struct events {
  cudaEvent_t start{}, stop{};
  events() {
    CUDA_OK(cudaEventCreate(&start));
    CUDA_OK(cudaEventCreate(&stop));
  }
  ~events() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
};

/// Median seconds per call of `launch` on `stream`, as the GPU runs it: `inner` calls are captured in
/// a CUDA graph so that host launch cost is not timed (a training step launches ahead of the GPU).
/// One call sizes the sample, `warmup` calls warm up, then `samples` graph launches are timed, `inner`
/// chosen so that a sample lasts about `sample_s`. Falls back to a plain loop if capture fails. Copies
/// pass `use_graph` false: a captured copy becomes a memcpy node on the copy engines (2.4 TB/s on an H100
/// against 3.0 TB/s for cudaMemcpyAsync's SM copy kernel, which is what elementwise kernels see).
template <typename F>
double time_calls(cudaStream_t stream, F&& launch, int warmup, int samples, double sample_s, bool use_graph = true) {
  events ev;
  for (int i = 0; i < std::max(1, warmup); ++i) launch();
  CUDA_OK(cudaEventRecord(ev.start, stream));
  launch();
  CUDA_OK(cudaEventRecord(ev.stop, stream));
  CUDA_OK(cudaEventSynchronize(ev.stop));
  float ms = 0;
  CUDA_OK(cudaEventElapsedTime(&ms, ev.start, ev.stop));
  const int inner = static_cast<int>(std::clamp(std::ceil(sample_s / std::max(1e-7, ms * 1e-3)), 1.0, 2000.0));
  cudaGraph_t graph{};
  cudaGraphExec_t exec{};
  bool graphed = use_graph && cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess;
  if (graphed) {
    for (int i = 0; i < inner; ++i) launch();
    graphed = cudaStreamEndCapture(stream, &graph) == cudaSuccess &&
              cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
    if (!graphed) cudaGetLastError();  // clear the failed capture; time the plain loop instead
  }
  auto sample = [&] {
    if (graphed) {
      CUDA_OK(cudaGraphLaunch(exec, stream));
    } else {
      for (int i = 0; i < inner; ++i) launch();
    }
  };
  sample();  // upload the graph
  std::vector<double> per_call;
  for (int s = 0; s < samples; ++s) {
    CUDA_OK(cudaEventRecord(ev.start, stream));
    sample();
    CUDA_OK(cudaEventRecord(ev.stop, stream));
    CUDA_OK(cudaEventSynchronize(ev.stop));
    CUDA_OK(cudaEventElapsedTime(&ms, ev.start, ev.stop));
    per_call.push_back(ms * 1e-3 / inner);
  }
  if (exec != nullptr) cudaGraphExecDestroy(exec);
  if (graph != nullptr) cudaGraphDestroy(graph);
  return median(per_call);
}

std::string driver_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (std::getline(in, line)) {
    std::istringstream ss(line);
    std::string word;
    // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ...": the
    // first word made of digits and at least one dot.
    while (ss >> word) {
      if (word.find('.') != std::string::npos && word.find_first_not_of("0123456789.") == std::string::npos) return word;
    }
  }
  int v = 0;
  cudaDriverGetVersion(&v);
  return fmt::format("CUDA driver API {}.{}", v / 1000, (v % 1000) / 10);
}

/// Descriptors of one TN GEMM; freed on scope exit.
struct lt_problem {
  cublasLtMatmulDesc_t op{};
  cublasLtMatrixLayout_t a{}, b{}, c{};
  lt_problem(const lt_types& t, const gemm_shape& s) {
    BLAS_OK(cublasLtMatmulDescCreate(&op, t.compute, CUDA_R_32F));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    BLAS_OK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    BLAS_OK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    // Column-major: A stored k×m (op T gives m×k), B k×n, C m×n.
    BLAS_OK(cublasLtMatrixLayoutCreate(&a, t.ab, static_cast<std::uint64_t>(s.k), static_cast<std::uint64_t>(s.m), s.k));
    BLAS_OK(cublasLtMatrixLayoutCreate(&b, t.ab, static_cast<std::uint64_t>(s.k), static_cast<std::uint64_t>(s.n), s.k));
    BLAS_OK(cublasLtMatrixLayoutCreate(&c, t.cd, static_cast<std::uint64_t>(s.m), static_cast<std::uint64_t>(s.n), s.m));
    if (s.batch > 1) {
      const auto count = static_cast<std::int32_t>(s.batch);
      const std::int64_t strides[3] = {s.k * s.m, s.k * s.n, s.m * s.n};
      cublasLtMatrixLayout_t layouts[3] = {a, b, c};
      for (int i = 0; i < 3; ++i) {
        BLAS_OK(cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
        BLAS_OK(cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &strides[i],
                                                 sizeof strides[i]));
      }
    }
  }
  ~lt_problem() {
    cublasLtMatrixLayoutDestroy(c);
    cublasLtMatrixLayoutDestroy(b);
    cublasLtMatrixLayoutDestroy(a);
    cublasLtMatmulDescDestroy(op);
  }
  lt_problem(const lt_problem&) = delete;
  lt_problem& operator=(const lt_problem&) = delete;
};

constexpr std::size_t kWorkspaceBytes = 32u << 20;  // cuBLAS's recommendation for Hopper

/// The precision the warm-up filled A and B with (that of the largest request).
dtype big_dtype_sentinel(const std::vector<gemm_request>& r) {
  return std::max_element(r.begin(), r.end(), [](const auto& a, const auto& b) {
           return a.shape.m * a.shape.n * a.shape.k * a.shape.batch < b.shape.m * b.shape.n * b.shape.k * b.shape.batch;
         })->precision;
}

}  // namespace

int gpu_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

gpu_device_info gpu_info(int device) {
  const int n = gpu_count();
  if (device < 0 || device >= n) {
    throw input_error(n == 0 ? std::string("no GPU is visible to this process (CUDA_VISIBLE_DEVICES, driver?)")
                             : fmt::format("--device {}: only {} GPU(s) are visible", device, n));
  }
  cudaDeviceProp prop{};
  CUDA_OK(cudaGetDeviceProperties(&prop, device));
  gpu_device_info g;
  g.device = device;
  g.name = prop.name;
  g.catalog_name = catalog_gpu_name(g.name);
  g.sm_count = prop.multiProcessorCount;
  g.memory_bytes = static_cast<std::int64_t>(prop.totalGlobalMem);
  g.driver_version = driver_version();
  int rt = 0;
  cudaRuntimeGetVersion(&rt);
  g.cuda_runtime_version = fmt::format("{}.{}", rt / 1000, (rt % 1000) / 10);
  const std::size_t lt = cublasLtGetVersion();
  g.cublaslt_version = fmt::format("{}.{}.{}", lt / 10000, (lt / 100) % 100, lt % 100);
  int nv = 0;
  ncclGetVersion(&nv);
  g.nccl_version = fmt::format("{}.{}.{}", nv / 10000, (nv / 100) % 100, nv % 100);
  return g;
}

std::vector<gemm_result> run_gemms(int device, const std::vector<gemm_request>& requests, const gemm_timing& t,
                                   const std::function<void(std::size_t, std::size_t)>& progress) {
  gpu_info(device);  // checks the device
  if (requests.empty()) return {};
  CUDA_OK(cudaSetDevice(device));
  cudaDeviceProp prop{};
  CUDA_OK(cudaGetDeviceProperties(&prop, device));
  std::size_t a_bytes = 0, b_bytes = 0, c_bytes = 0;
  for (const gemm_request& r : requests) {
    const lt_types ty = types_of(r.precision);
    const gemm_shape& s = r.shape;
    if (r.precision == dtype::fp8 && prop.major * 10 + prop.minor < 89) {
      throw input_error(fmt::format("--dtype fp8: {} (compute capability {}.{}) has no FP8 tensor cores", prop.name,
                                    prop.major, prop.minor));
    }
    if (r.precision == dtype::fp8 && (s.m % 16 || s.n % 16 || s.k % 16)) {
      throw input_error(fmt::format("gemm {}: fp8 needs m, n and k multiples of 16, got {}×{}×{}", r.name, s.m, s.n, s.k));
    }
    a_bytes = std::max(a_bytes, static_cast<std::size_t>(s.m * s.k * s.batch * ty.ab_bytes));
    b_bytes = std::max(b_bytes, static_cast<std::size_t>(s.k * s.n * s.batch * ty.ab_bytes));
    c_bytes = std::max(c_bytes, static_cast<std::size_t>(s.m * s.n * s.batch * ty.cd_bytes));
  }
  if (a_bytes + b_bytes + c_bytes > static_cast<std::size_t>(prop.totalGlobalMem) * 9 / 10) {
    throw input_error(fmt::format("gemm: the largest shapes need {:.1f} GiB, more than the GPU holds",
                                  static_cast<double>(a_bytes + b_bytes + c_bytes) / (1u << 30)));
  }
  device_buffer A(a_bytes), B(b_bytes), C(c_bytes), workspace(kWorkspaceBytes);
  cudaStream_t stream{};
  CUDA_OK(cudaStreamCreate(&stream));
  cublasLtHandle_t lt{};
  BLAS_OK(cublasLtCreate(&lt));
  cublasHandle_t blas{};
  BLAS_OK(cublasCreate(&blas));
  BLAS_OK(cublasSetStream(blas, stream));
  cublasLtMatmulPreference_t pref{};
  BLAS_OK(cublasLtMatmulPreferenceCreate(&pref));
  const std::uint64_t ws = kWorkspaceBytes;
  BLAS_OK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));

  // Bring the clocks up from idle before the first timed shape: about 0.3 s of the largest GEMM.
  {
    const gemm_request& big = *std::max_element(requests.begin(), requests.end(), [](const auto& a, const auto& b) {
      return a.shape.m * a.shape.n * a.shape.k * a.shape.batch < b.shape.m * b.shape.n * b.shape.k * b.shape.batch;
    });
    const lt_types ty = types_of(big.precision);
    fill_random(A.p, A.bytes, big.precision, 1);
    fill_random(B.p, B.bytes, big.precision, 2);
    lt_problem prob(ty, big.shape);
    cublasLtMatmulHeuristicResult_t first{};
    int got = 0;
    const float one = 1.f, zero = 0.f;
    BLAS_OK(cublasLtMatmulAlgoGetHeuristic(lt, prob.op, prob.a, prob.b, prob.c, prob.c, pref, 1, &first, &got));
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    while (got > 0 && std::chrono::steady_clock::now() < until) {
      for (int i = 0; i < 10; ++i) {
        BLAS_OK(cublasLtMatmul(lt, prob.op, &one, A.p, prob.a, B.p, prob.b, &zero, C.p, prob.c, C.p, prob.c,
                               &first.algo, workspace.p, kWorkspaceBytes, stream));
      }
      CUDA_OK(cudaStreamSynchronize(stream));
    }
  }
  std::vector<gemm_result> out;
  dtype filled = big_dtype_sentinel(requests);
  bool any_filled = true;
  const float alpha = 1.f, beta = 0.f;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const gemm_request& r = requests[i];
    const lt_types ty = types_of(r.precision);
    if (!any_filled || filled != r.precision) {
      fill_random(A.p, A.bytes, r.precision, 1);
      fill_random(B.p, B.bytes, r.precision, 2);
      filled = r.precision;
      any_filled = true;
    }
    lt_problem prob(ty, r.shape);
    std::vector<cublasLtMatmulHeuristicResult_t> cand(static_cast<std::size_t>(std::max(1, t.algorithms)));
    int got = 0;
    BLAS_OK(cublasLtMatmulAlgoGetHeuristic(lt, prob.op, prob.a, prob.b, prob.c, prob.c, pref,
                                           static_cast<int>(cand.size()), cand.data(), &got));
    if (got == 0) throw std::runtime_error(fmt::format("gemm {}: cuBLASLt offers no algorithm", r.name));
    gemm_result res;
    res.request = r;
    res.time_s = 1e300;
    for (int a = 0; a < got; ++a) {
      const cublasLtMatmulAlgo_t* algo = &cand[static_cast<std::size_t>(a)].algo;
      auto launch = [&] {
        BLAS_OK(cublasLtMatmul(lt, prob.op, &alpha, A.p, prob.a, B.p, prob.b, &beta, C.p, prob.c, C.p, prob.c, algo,
                               workspace.p, kWorkspaceBytes, stream));
      };
      double s = 0;
      try {
        s = time_calls(stream, launch, t.warmup, t.samples, t.sample_s);
      } catch (const std::runtime_error&) {
        if (a == 0) throw;
        continue;  // a candidate that fails to launch is skipped, as autotuners do
      }
      if (a == 0) res.heuristic_time_s = s;
      res.time_s = std::min(res.time_s, s);
      ++res.algorithms_timed;
    }
    if (t.reference && r.precision != dtype::fp8) {
      BLAS_OK(cublasSetMathMode(blas, r.precision == dtype::tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
      const gemm_shape& s = r.shape;
      auto launch = [&] {
        BLAS_OK(cublasGemmStridedBatchedEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(s.m), static_cast<int>(s.n),
                                           static_cast<int>(s.k), &alpha, A.p, ty.ab, static_cast<int>(s.k), s.k * s.m,
                                           B.p, ty.ab, static_cast<int>(s.k), s.k * s.n, &beta, C.p, ty.cd,
                                           static_cast<int>(s.m), s.m * s.n, static_cast<int>(s.batch), ty.compute,
                                           CUBLAS_GEMM_DEFAULT));
      };
      res.reference_time_s = time_calls(stream, launch, t.warmup, t.samples, t.sample_s);
    }
    out.push_back(res);
    if (progress) progress(i + 1, requests.size());
  }
  cublasLtMatmulPreferenceDestroy(pref);
  cublasDestroy(blas);
  cublasLtDestroy(lt);
  cudaStreamDestroy(stream);
  return out;
}

std::vector<copy_result> run_copies(int device, std::int64_t buffer_bytes, int samples) {
  gpu_info(device);
  CUDA_OK(cudaSetDevice(device));
  const auto n = static_cast<std::size_t>(buffer_bytes);
  device_buffer src(n), dst(n);
  CUDA_OK(cudaMemset(src.p, 1, n));
  void* host = nullptr;
  CUDA_OK(cudaMallocHost(&host, n));
  std::memset(host, 1, n);
  cudaStream_t stream{};
  CUDA_OK(cudaStreamCreate(&stream));
  std::vector<copy_result> out;
  auto measure = [&](const char* what, void* to, const void* from, cudaMemcpyKind kind, double counted) {
    auto launch = [&] { CUDA_OK(cudaMemcpyAsync(to, from, n, kind, stream)); };
    const double s = time_calls(stream, launch, 3, samples, 5e-3, false);
    out.push_back({what, counted, s, counted / s});
  };
  measure("device_to_device", dst.p, src.p, cudaMemcpyDeviceToDevice, 2.0 * static_cast<double>(n));
  measure("host_to_device", dst.p, host, cudaMemcpyHostToDevice, static_cast<double>(n));
  measure("device_to_host", host, src.p, cudaMemcpyDeviceToHost, static_cast<double>(n));
  cudaStreamDestroy(stream);
  cudaFreeHost(host);
  return out;
}

}  // namespace trainplan::bench
