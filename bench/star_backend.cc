// Collectives on host memory through rank 0 over the control plane (docs/bench.md "Launch"): the CPU
// path of a torchrun-style launch, where there is no MPI world. Correct, checkable, and slow by design.
#include <chrono>
#include <cstring>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "backend.h"

namespace trainplan::bench {

namespace {

constexpr int kTagIn = 7300;
constexpr int kTagOut = 7301;

/// What a rank sends rank 0 for one op: which group it is in, its place there, then its input.
struct star_header {
  std::int64_t group;
  std::int64_t group_rank;
  std::int64_t group_size;
};

class star_backend final : public collective_backend {
 public:
  star_backend(const world_info& w, std::int64_t group, std::int64_t group_rank, std::int64_t group_size)
      : w_(w), group_(group), rank_(group_rank), size_(group_size) {}
  std::string_view name() const override { return "star"; }
  std::int64_t rank() const override { return rank_; }
  std::int64_t size() const override { return size_; }
  std::string version() const override { return "trainplan-bench star over " + std::string(w_.control->name()); }
  bool has_in_place(collective_kind) const override { return false; }
  void write_input(collective_kind, const buffer_counts& c, bool, const std::vector<float>& v) override {
    send_.assign(v.begin(), v.end());
    send_.resize(static_cast<std::size_t>(c.send));
  }
  void clear_output(const buffer_counts& c) override { recv_.assign(static_cast<std::size_t>(c.recv), -1.0f); }
  std::vector<float> read_output(collective_kind, const buffer_counts& c, bool) override {
    std::vector<float> out = recv_;
    out.resize(static_cast<std::size_t>(c.recv), -1.0f);
    return out;
  }

  double run(collective_kind kind, const buffer_counts& c, bool, int iters, const deadline& d) override {
    send_.resize(static_cast<std::size_t>(c.send));
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) {
      if (!(w_.self.rank == 0 ? serve(kind, c, d) : take_part(d))) return -1;
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
  }

 private:
  std::string message() const {
    const star_header h{group_, rank_, size_};
    std::string m(reinterpret_cast<const char*>(&h), sizeof h);
    m.append(reinterpret_cast<const char*>(send_.data()), send_.size() * sizeof(float));
    return m;
  }
  void take_output(const std::string& bytes) {
    recv_.resize(bytes.size() / sizeof(float));
    std::memcpy(recv_.data(), bytes.data(), recv_.size() * sizeof(float));
  }
  bool take_part(const deadline& d) {
    if (!w_.control->send(0, kTagIn, message(), d)) return false;
    const std::optional<std::string> out = w_.control->recv(0, kTagOut, d);
    if (!out) return false;
    take_output(*out);
    return true;
  }
  /// Rank 0: every rank's input, each group's reference outputs, sent back.
  bool serve(collective_kind kind, const buffer_counts& c, const deadline& d) {
    struct member {
      std::int64_t world_rank;
      std::int64_t group_rank;
      std::vector<float> input;
    };
    std::map<std::int64_t, std::vector<member>> groups;
    for (std::int64_t r = 0; r < w_.self.world; ++r) {
      const std::optional<std::string> m = r == 0 ? std::optional<std::string>(message()) : w_.control->recv(r, kTagIn, d);
      if (!m || m->size() < sizeof(star_header)) return false;
      star_header h{};
      std::memcpy(&h, m->data(), sizeof h);
      std::vector<float> in((m->size() - sizeof h) / sizeof(float));
      std::memcpy(in.data(), m->data() + sizeof h, in.size() * sizeof(float));
      groups[h.group].push_back({r, h.group_rank, std::move(in)});
    }
    for (auto& [g, members] : groups) {
      std::vector<std::vector<float>> inputs(members.size());
      for (member& m : members) {
        if (m.group_rank < 0 || m.group_rank >= static_cast<std::int64_t>(members.size())) {
          throw std::runtime_error(fmt::format("star backend: group {} rank {} of {}", g, m.group_rank, members.size()));
        }
        inputs[static_cast<std::size_t>(m.group_rank)] = std::move(m.input);
      }
      const std::vector<std::vector<float>> outs = reference_collective(kind, c, inputs);
      for (const member& m : members) {
        const std::vector<float>& o = outs[static_cast<std::size_t>(m.group_rank)];
        const std::string bytes(reinterpret_cast<const char*>(o.data()), o.size() * sizeof(float));
        if (m.world_rank == 0) {
          take_output(bytes);
        } else if (!w_.control->send(m.world_rank, kTagOut, bytes, d)) {
          return false;
        }
      }
    }
    return true;
  }

  const world_info& w_;
  std::int64_t group_, rank_, size_;
  std::vector<float> send_, recv_;
};

}  // namespace

std::unique_ptr<collective_backend> make_star_backend(const world_info& w, std::int64_t group, std::int64_t group_rank,
                                                      std::int64_t group_size) {
  return std::make_unique<star_backend>(w, group, group_rank, group_size);
}

}  // namespace trainplan::bench
