// GPU measurements with the CUDA runtime, cuBLASLt and cuBLAS (docs/bench.md "GEMM" and "Memory").
// Host code only: no kernels of our own, so no nvcc is needed.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <array>
#include <optional>
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
#include "trainplan/core/base/error.h"

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

namespace {

/// Sizes of A, B and C that hold every request; refuses what the GPU cannot run or hold.
std::array<std::size_t, 3> gemm_buffer_bytes(const std::vector<gemm_request>& requests, const cudaDeviceProp& prop) {
  std::array<std::size_t, 3> bytes{};
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
    bytes[0] = std::max(bytes[0], static_cast<std::size_t>(s.m * s.k * s.batch * ty.ab_bytes));
    bytes[1] = std::max(bytes[1], static_cast<std::size_t>(s.k * s.n * s.batch * ty.ab_bytes));
    bytes[2] = std::max(bytes[2], static_cast<std::size_t>(s.m * s.n * s.batch * ty.cd_bytes));
  }
  if (bytes[0] + bytes[1] + bytes[2] > static_cast<std::size_t>(prop.totalGlobalMem) * 9 / 10) {
    throw input_error(fmt::format("gemm: the largest shapes need {:.1f} GiB, more than the GPU holds",
                                  static_cast<double>(bytes[0] + bytes[1] + bytes[2]) / (1u << 30)));
  }
  return bytes;
}

std::int64_t flops_of(const gemm_request& r) { return r.shape.m * r.shape.n * r.shape.k * r.shape.batch; }

/// Buffers, stream and library handles of one GEMM run, released on scope exit.
class gemm_session {
 public:
  gemm_session(const std::array<std::size_t, 3>& bytes)
      : a_(bytes[0]), b_(bytes[1]), c_(bytes[2]), workspace_(kWorkspaceBytes) {
    CUDA_OK(cudaStreamCreate(&stream_));
    BLAS_OK(cublasLtCreate(&lt_));
    BLAS_OK(cublasCreate(&blas_));
    BLAS_OK(cublasSetStream(blas_, stream_));
    BLAS_OK(cublasLtMatmulPreferenceCreate(&pref_));
    const std::uint64_t ws = kWorkspaceBytes;
    BLAS_OK(cublasLtMatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  }
  ~gemm_session() {
    cublasLtMatmulPreferenceDestroy(pref_);
    cublasDestroy(blas_);
    cublasLtDestroy(lt_);
    cudaStreamDestroy(stream_);
  }
  gemm_session(const gemm_session&) = delete;
  gemm_session& operator=(const gemm_session&) = delete;

  /// Random inputs of `d` in A and B (kept while the precision stays the same).
  void fill(dtype d) {
    if (filled_ && *filled_ == d) return;
    fill_random(a_.p, a_.bytes, d, 1);
    fill_random(b_.p, b_.bytes, d, 2);
    filled_ = d;
  }

  /// About 0.3 s of `r` with the heuristic's first choice: clocks up from idle before timing.
  void warm_up(const gemm_request& r) {
    fill(r.precision);
    lt_problem prob(types_of(r.precision), r.shape);
    std::vector<cublasLtMatmulHeuristicResult_t> first = candidates(prob, 1);
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    while (!first.empty() && std::chrono::steady_clock::now() < until) {
      for (int i = 0; i < 10; ++i) matmul(prob, first.front().algo);
      CUDA_OK(cudaStreamSynchronize(stream_));
    }
  }

  /// Every heuristic candidate (up to t.algorithms) and, unless fp8, cublasGemmEx's default.
  gemm_result time(const gemm_request& r, const gemm_timing& t) {
    fill(r.precision);
    lt_problem prob(types_of(r.precision), r.shape);
    const std::vector<cublasLtMatmulHeuristicResult_t> cand = candidates(prob, std::max(1, t.algorithms));
    if (cand.empty()) throw std::runtime_error(fmt::format("gemm {}: cuBLASLt offers no algorithm", r.name));
    gemm_result res;
    res.request = r;
    res.time_s = 1e300;
    for (std::size_t a = 0; a < cand.size(); ++a) {
      double s = 0;
      try {
        s = time_calls(stream_, [&] { matmul(prob, cand[a].algo); }, t.warmup, t.samples, t.sample_s);
      } catch (const std::runtime_error&) {
        if (a == 0) throw;
        continue;  // a candidate that fails to launch is skipped, as autotuners do
      }
      if (a == 0) res.heuristic_time_s = s;
      res.time_s = std::min(res.time_s, s);
      ++res.algorithms_timed;
    }
    if (t.reference && r.precision != dtype::fp8) {
      res.reference_time_s = time_calls(stream_, [&] { gemm_ex(r); }, t.warmup, t.samples, t.sample_s);
    }
    return res;
  }

 private:
  std::vector<cublasLtMatmulHeuristicResult_t> candidates(const lt_problem& prob, int n) {
    std::vector<cublasLtMatmulHeuristicResult_t> c(static_cast<std::size_t>(n));
    int got = 0;
    BLAS_OK(cublasLtMatmulAlgoGetHeuristic(lt_, prob.op, prob.a, prob.b, prob.c, prob.c, pref_, n, c.data(), &got));
    c.resize(static_cast<std::size_t>(got));
    return c;
  }
  void matmul(const lt_problem& prob, const cublasLtMatmulAlgo_t& algo) {
    const float alpha = 1.f, beta = 0.f;
    BLAS_OK(cublasLtMatmul(lt_, prob.op, &alpha, a_.p, prob.a, b_.p, prob.b, &beta, c_.p, prob.c, c_.p, prob.c, &algo,
                           workspace_.p, kWorkspaceBytes, stream_));
  }
  void gemm_ex(const gemm_request& r) {
    const lt_types ty = types_of(r.precision);
    const gemm_shape& s = r.shape;
    const float alpha = 1.f, beta = 0.f;
    BLAS_OK(cublasSetMathMode(blas_, r.precision == dtype::tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    BLAS_OK(cublasGemmStridedBatchedEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(s.m), static_cast<int>(s.n),
                                       static_cast<int>(s.k), &alpha, a_.p, ty.ab, static_cast<int>(s.k), s.k * s.m, b_.p,
                                       ty.ab, static_cast<int>(s.k), s.k * s.n, &beta, c_.p, ty.cd, static_cast<int>(s.m),
                                       s.m * s.n, static_cast<int>(s.batch), ty.compute, CUBLAS_GEMM_DEFAULT));
  }

  device_buffer a_, b_, c_, workspace_;
  cudaStream_t stream_{};
  cublasLtHandle_t lt_{};
  cublasHandle_t blas_{};
  cublasLtMatmulPreference_t pref_{};
  std::optional<dtype> filled_;
};

}  // namespace

std::vector<gemm_result> run_gemms(int device, const std::vector<gemm_request>& requests, const gemm_timing& t,
                                   const std::function<void(std::size_t, std::size_t)>& progress) {
  gpu_info(device);  // checks the device
  if (requests.empty()) return {};
  CUDA_OK(cudaSetDevice(device));
  cudaDeviceProp prop{};
  CUDA_OK(cudaGetDeviceProperties(&prop, device));
  gemm_session session(gemm_buffer_bytes(requests, prop));
  session.warm_up(*std::max_element(requests.begin(), requests.end(),
                                    [](const auto& a, const auto& b) { return flops_of(a) < flops_of(b); }));
  std::vector<gemm_result> out;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    out.push_back(session.time(requests[i], t));
    if (progress) progress(i + 1, requests.size());
  }
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
