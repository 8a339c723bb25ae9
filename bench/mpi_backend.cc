// Collectives on host memory over MPI (docs/bench.md "Collectives"): the CPU path that CI runs.
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "backend.h"
#include "trainplan/core/base/error.h"

namespace trainplan::bench {

namespace {

class mpi_backend final : public collective_backend {
 public:
  mpi_backend(MPI_Comm comm, const world_info& w) : comm_(comm), version_(w.mpi_version) {
    int r = 0, n = 1;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    rank_ = r;
    size_ = n;
  }
  ~mpi_backend() override {
    if (comm_ != MPI_COMM_WORLD && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);  // a group's split
  }
  mpi_backend(const mpi_backend&) = delete;
  mpi_backend& operator=(const mpi_backend&) = delete;
  std::string_view name() const override { return "mpi"; }
  std::int64_t rank() const override { return rank_; }
  std::int64_t size() const override { return size_; }
  std::string version() const override { return version_; }
  bool has_in_place(collective_kind kind) const override {
    return kind == collective_kind::all_reduce || kind == collective_kind::all_gather ||
           kind == collective_kind::reduce_scatter || kind == collective_kind::broadcast;
  }

  void write_input(collective_kind kind, const buffer_counts& c, bool in_place, const std::vector<float>& v) override {
    reserve(c);
    float* dst = send_.data();
    if (in_place || kind == collective_kind::broadcast) {
      dst = recv_.data();
      if (kind == collective_kind::all_gather) dst += rank_ * c.send;
    }
    std::memcpy(dst, v.data(), v.size() * sizeof(float));
  }
  void clear_output(const buffer_counts& c) override {
    reserve(c);
    std::fill(recv_.begin(), recv_.end(), -1.0f);
  }
  std::vector<float> read_output(collective_kind, const buffer_counts& c, bool) override {
    // MPI's in-place reduce-scatter leaves the rank's block at the start of the buffer.
    return {recv_.begin(), recv_.begin() + c.recv};
  }

  double run(collective_kind kind, const buffer_counts& c, bool in_place, int iters, const deadline& d) override {
    reserve(c);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
      MPI_Request req = MPI_REQUEST_NULL, req2 = MPI_REQUEST_NULL;
      start(kind, c, in_place, req, req2);
      if (!wait_for(req, d)) return -1;
      if (req2 != MPI_REQUEST_NULL && !wait_for(req2, d)) return -1;
    }
    return (MPI_Wtime() - t0) / iters;
  }

 private:
  void reserve(const buffer_counts& c) {
    // reduce-scatter in place takes its whole input in the receive buffer.
    const auto recv = static_cast<std::size_t>(std::max(c.recv, c.send));
    if (send_.size() < static_cast<std::size_t>(c.send)) send_.resize(static_cast<std::size_t>(c.send));
    if (recv_.size() < recv) recv_.resize(recv);
  }

  void start(collective_kind kind, const buffer_counts& c, bool in_place, MPI_Request& req, MPI_Request& req2) {
    const int sc = static_cast<int>(c.send), rc = static_cast<int>(c.recv), n = static_cast<int>(size_);
    const void* src = in_place ? MPI_IN_PLACE : send_.data();
    switch (kind) {
      case collective_kind::all_reduce:
        MPI_Iallreduce(src, recv_.data(), rc, MPI_FLOAT, MPI_SUM, comm_, &req);
        break;
      case collective_kind::all_gather:
        MPI_Iallgather(src, sc, MPI_FLOAT, recv_.data(), sc, MPI_FLOAT, comm_, &req);
        break;
      case collective_kind::reduce_scatter:
        MPI_Ireduce_scatter_block(src, recv_.data(), rc, MPI_FLOAT, MPI_SUM, comm_, &req);
        break;
      case collective_kind::all_to_all:
        MPI_Ialltoall(send_.data(), sc / n, MPI_FLOAT, recv_.data(), rc / n, MPI_FLOAT, comm_, &req);
        break;
      case collective_kind::broadcast:
        MPI_Ibcast(recv_.data(), rc, MPI_FLOAT, 0, comm_, &req);
        break;
      case collective_kind::send_recv: {
        const int next = static_cast<int>((rank_ + 1) % size_), prev = static_cast<int>((rank_ - 1 + size_) % size_);
        MPI_Irecv(recv_.data(), rc, MPI_FLOAT, prev, 7100, comm_, &req2);
        MPI_Isend(send_.data(), sc, MPI_FLOAT, next, 7100, comm_, &req);
        break;
      }
    }
  }

  MPI_Comm comm_;
  std::string version_;
  std::int64_t rank_ = 0, size_ = 1;
  std::vector<float> send_, recv_;
};

}  // namespace

std::unique_ptr<collective_backend> make_mpi_backend(MPI_Comm comm, const world_info& w) {
  return std::make_unique<mpi_backend>(comm, w);
}

}  // namespace trainplan::bench
