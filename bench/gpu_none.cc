// trainplan-bench built without CUDA: every GPU measurement is a clear error (exit 2).
#include "backend.h"
#include "gpu.h"
#include "trainplan/core/base/error.h"

namespace trainplan::bench {

namespace {
[[noreturn]] void no_cuda(const char* what) {
  throw input_error(std::string(what) +
                    " needs a GPU, and this trainplan-bench was built without CUDA (configure with the CUDA toolkit "
                    "present, -DTRAINPLAN_WITH_CUDA=ON); --backend mpi measures collectives on CPUs");
}
}  // namespace

gpu_device_info gpu_info(int) { no_cuda("gemm/memory"); }
int gpu_count() { return 0; }
bool gpu_available() { return false; }
std::vector<gemm_result> run_gemms(int, const std::vector<gemm_request>&, const gemm_timing&,
                                   const std::function<void(std::size_t, std::size_t)>&) {
  no_cuda("gemm");
}
std::vector<copy_result> run_copies(int, std::int64_t, int) { no_cuda("memory"); }
std::string new_nccl_id() { no_cuda("--backend nccl"); }
std::unique_ptr<collective_backend> make_nccl_backend(const world_info&, std::int64_t, std::int64_t, const std::string&,
                                                      double) {
  no_cuda("--backend nccl");
}

}  // namespace trainplan::bench
