// Collectives on GPU memory with NCCL (docs/bench.md "Collectives"): one rank per GPU, the communicator
// set up over MPI, every wait polled against its deadline.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "backend.h"
#include "gpu.h"
#include "trainplan/core/base/error.h"

namespace trainplan::bench {

namespace {

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(e)));
}
void nccl_ok(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(fmt::format("{}: {}", what, ncclGetErrorString(r)));
}
#define CUDA_OK(x) cuda_ok((x), #x)
#define NCCL_OK(x) nccl_ok((x), #x)

class nccl_backend final : public collective_backend {
 public:
  nccl_backend(const world_info& w, std::int64_t group_rank, std::int64_t group_size, const std::string& id_bytes,
               double timeout_s)
      : rank_(group_rank), size_(group_size) {
    const int gpus = gpu_count();
    if (gpus == 0) throw input_error(fmt::format("--backend nccl: no GPU is visible on {} (rank {})", w.self.host, w.self.rank));
    device_ = static_cast<int>(w.self.local_rank % gpus);
    CUDA_OK(cudaSetDevice(device_));
    ncclUniqueId id{};
    if (id_bytes.size() != sizeof id) throw std::runtime_error("NCCL id of the wrong size");
    std::memcpy(&id, id_bytes.data(), sizeof id);
    {
      watchdog wd(w, "NCCL initialisation", timeout_s);
      NCCL_OK(ncclCommInitRank(&nccl_, static_cast<int>(size_), id, static_cast<int>(rank_)));
    }
    CUDA_OK(cudaStreamCreate(&stream_));
    CUDA_OK(cudaEventCreate(&start_));
    CUDA_OK(cudaEventCreate(&stop_));
  }
  ~nccl_backend() override {
    if (timed_out_) {
      ncclCommAbort(nccl_);
    } else {
      ncclCommDestroy(nccl_);
    }
    cudaFree(send_);
    cudaFree(recv_);
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaStreamDestroy(stream_);
  }
  std::string_view name() const override { return "nccl"; }
  std::int64_t rank() const override { return rank_; }
  std::int64_t size() const override { return size_; }
  std::string version() const override {
    int v = 0;
    ncclGetVersion(&v);
    return fmt::format("NCCL {}.{}.{}", v / 10000, (v / 100) % 100, v % 100);
  }
  bool has_in_place(collective_kind kind) const override {
    return kind == collective_kind::all_reduce || kind == collective_kind::all_gather ||
           kind == collective_kind::reduce_scatter || kind == collective_kind::broadcast;
  }

  void write_input(collective_kind kind, const buffer_counts& c, bool in_place, const std::vector<float>& v) override {
    reserve(c);
    float* dst = in_place ? recv_ : send_;
    if (in_place && kind == collective_kind::all_gather) dst += rank_ * c.send;
    CUDA_OK(cudaMemcpy(dst, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  void clear_output(const buffer_counts& c) override {
    reserve(c);
    CUDA_OK(cudaMemset(recv_, 0xFF, recv_capacity_ * sizeof(float)));  // NaN: equal to no result
  }
  std::vector<float> read_output(collective_kind kind, const buffer_counts& c, bool in_place) override {
    std::vector<float> out(static_cast<std::size_t>(c.recv));
    const float* src = recv_;
    if (in_place && kind == collective_kind::reduce_scatter) src += rank_ * c.recv;
    CUDA_OK(cudaMemcpy(out.data(), src, out.size() * sizeof(float), cudaMemcpyDeviceToHost));
    return out;
  }

  double run(collective_kind kind, const buffer_counts& c, bool in_place, int iters, const deadline& d) override {
    reserve(c);
    CUDA_OK(cudaEventRecord(start_, stream_));
    for (int i = 0; i < iters; ++i) launch(kind, c, in_place);
    CUDA_OK(cudaEventRecord(stop_, stream_));
    for (;;) {
      const cudaError_t q = cudaEventQuery(stop_);
      if (q == cudaSuccess) break;
      if (q != cudaErrorNotReady) cuda_ok(q, "collective");
      if (d.passed()) {
        timed_out_ = true;
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, start_, stop_));
    return ms * 1e-3 / iters;
  }

 private:
  void reserve(const buffer_counts& c) {
    const auto need_recv = static_cast<std::size_t>(std::max(c.recv, c.send));
    if (static_cast<std::size_t>(c.send) > send_capacity_) {
      cudaFree(send_);
      CUDA_OK(cudaMalloc(&send_, static_cast<std::size_t>(c.send) * sizeof(float)));
      send_capacity_ = static_cast<std::size_t>(c.send);
    }
    if (need_recv > recv_capacity_) {
      cudaFree(recv_);
      CUDA_OK(cudaMalloc(&recv_, need_recv * sizeof(float)));
      recv_capacity_ = need_recv;
    }
  }

  void launch(collective_kind kind, const buffer_counts& c, bool in_place) {
    const auto sc = static_cast<std::size_t>(c.send), rc = static_cast<std::size_t>(c.recv);
    switch (kind) {
      case collective_kind::all_reduce:
        NCCL_OK(ncclAllReduce(in_place ? recv_ : send_, recv_, rc, ncclFloat, ncclSum, nccl_, stream_));
        break;
      case collective_kind::all_gather:
        NCCL_OK(ncclAllGather(in_place ? recv_ + rank_ * c.send : send_, recv_, sc, ncclFloat, nccl_, stream_));
        break;
      case collective_kind::reduce_scatter:
        if (in_place) {
          NCCL_OK(ncclReduceScatter(recv_, recv_ + rank_ * c.recv, rc, ncclFloat, ncclSum, nccl_, stream_));
        } else {
          NCCL_OK(ncclReduceScatter(send_, recv_, rc, ncclFloat, ncclSum, nccl_, stream_));
        }
        break;
      case collective_kind::broadcast:
        NCCL_OK(ncclBroadcast(in_place ? recv_ : send_, recv_, rc, ncclFloat, 0, nccl_, stream_));
        break;
      case collective_kind::all_to_all: {  // grouped send/recv, as nccl-tests' alltoall
        const std::size_t per = sc / static_cast<std::size_t>(size_);
        NCCL_OK(ncclGroupStart());
        for (std::int64_t p = 0; p < size_; ++p) {
          NCCL_OK(ncclSend(send_ + p * static_cast<std::int64_t>(per), per, ncclFloat, static_cast<int>(p), nccl_, stream_));
          NCCL_OK(ncclRecv(recv_ + p * static_cast<std::int64_t>(per), per, ncclFloat, static_cast<int>(p), nccl_, stream_));
        }
        NCCL_OK(ncclGroupEnd());
        break;
      }
      case collective_kind::send_recv: {
        const int next = static_cast<int>((rank_ + 1) % size_), prev = static_cast<int>((rank_ - 1 + size_) % size_);
        NCCL_OK(ncclGroupStart());
        NCCL_OK(ncclSend(send_, sc, ncclFloat, next, nccl_, stream_));
        NCCL_OK(ncclRecv(recv_, rc, ncclFloat, prev, nccl_, stream_));
        NCCL_OK(ncclGroupEnd());
        break;
      }
    }
  }

  std::int64_t rank_ = 0, size_ = 1;
  int device_ = 0;
  ncclComm_t nccl_{};
  cudaStream_t stream_{};
  cudaEvent_t start_{}, stop_{};
  float* send_ = nullptr;
  float* recv_ = nullptr;
  std::size_t send_capacity_ = 0, recv_capacity_ = 0;
  bool timed_out_ = false;
};

}  // namespace

bool gpu_available() { return gpu_count() > 0; }

std::string new_nccl_id() {
  ncclUniqueId id{};
  NCCL_OK(ncclGetUniqueId(&id));
  return std::string(reinterpret_cast<const char*>(&id), sizeof id);
}

std::unique_ptr<collective_backend> make_nccl_backend(const world_info& w, std::int64_t group_rank,
                                                      std::int64_t group_size, const std::string& id, double timeout_s) {
  return std::make_unique<nccl_backend>(w, group_rank, group_size, id, timeout_s);
}

}  // namespace trainplan::bench
