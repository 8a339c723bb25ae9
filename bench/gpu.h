// trainplan-bench's GPU measurements: cuBLASLt GEMMs and copy bandwidth on one device (docs/bench.md).
// Built from gpu_cuda.cc when CUDA is found, else from gpu_none.cc, whose functions throw input_error.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trainplan/core/estimate/compute.h"
#include "trainplan/core/hardware/hardware.h"

namespace trainplan::bench {

/// What the driver and libraries say about one GPU.
struct gpu_device_info {
  int device = 0;
  std::string name;             ///< "NVIDIA H100 80GB HBM3"
  std::string catalog_name;     ///< trainplan's name, "" when it has none
  std::int64_t sm_count = 0;
  std::int64_t memory_bytes = 0;
  std::string driver_version;   ///< "580.159.04" (/proc/driver/nvidia/version)
  std::string cuda_runtime_version;
  std::string cublaslt_version;
  std::string nccl_version;
};
/// Throws input_error when the bench was built without CUDA or the device does not exist.
gpu_device_info gpu_info(int device);
/// Number of visible GPUs (0 without CUDA).
int gpu_count();

/// One GEMM to time: C[m×n] = A[m×k]·B[k×n] in `precision`, TN layout, fp32 accumulation.
struct gemm_request {
  std::string name;  ///< "qkv.fwd", "grid"
  dtype precision = dtype::bf16;
  gemm_shape shape;
};

struct gemm_timing {
  int warmup = 5;            ///< untimed runs
  int samples = 20;          ///< timed samples; the median is reported
  double sample_s = 1e-3;    ///< each sample repeats the GEMM until it lasts about this long
  int algorithms = 8;        ///< cuBLASLt heuristic candidates timed; the fastest is reported
  bool reference = true;     ///< also time cublasGemmEx's default algorithm (not for fp8)
};

struct gemm_result {
  gemm_request request;
  double time_s = 0;            ///< fastest candidate, median sample
  double heuristic_time_s = 0;  ///< the heuristic's first choice (what frameworks get)
  int algorithms_timed = 0;
  double reference_time_s = 0;  ///< cublasGemmEx (CUBLAS_GEMM_DEFAULT); 0 when not timed
};
/// Times every request on `device`; `progress(i, n)` after each. Throws input_error on an unsupported
/// precision (fp8 needs compute capability 8.9 or more) or shape.
std::vector<gemm_result> run_gemms(int device, const std::vector<gemm_request>& requests, const gemm_timing& t,
                                   const std::function<void(std::size_t, std::size_t)>& progress);

/// One copy measurement. Device-to-device counts bytes read + written; host copies count bytes moved.
struct copy_result {
  std::string what;        ///< "device_to_device", "host_to_device", "device_to_host"
  double bytes = 0;        ///< per copy, as counted
  double time_s = 0;       ///< per copy, median
  double bytes_per_s = 0;
};
std::vector<copy_result> run_copies(int device, std::int64_t buffer_bytes, int samples);

}  // namespace trainplan::bench
