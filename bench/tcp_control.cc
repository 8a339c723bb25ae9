// The TCP control plane of a torchrun-style launch (docs/bench.md "Launch"): rank 0 listens on
// MASTER_PORT, every other rank connects to MASTER_ADDR:MASTER_PORT and says its rank. A message is
// framed as {int32 tag, uint64 length, bytes}; every read and write is polled against its deadline.
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "launch.h"
#include "trainplan/core/base/error.h"

namespace trainplan::bench {

namespace {

constexpr std::uint64_t kMaxMessageBytes = std::uint64_t{1} << 36;  // 64 GiB: a corrupt length is refused

/// Waits until `fd` is readable (or writable) or `d` passes; true when ready.
bool wait_fd(int fd, short events, const deadline& d) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, d.passed() ? 0 : 50);
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return false;
    if (d.passed()) return false;
  }
}

/// Reads exactly `n` bytes; 0 on success, 1 on timeout, 2 when the peer closed the connection.
int read_all(int fd, char* p, std::size_t n, const deadline& d) {
  while (n > 0) {
    if (!wait_fd(fd, POLLIN, d)) return 1;
    const ssize_t got = ::recv(fd, p, n, 0);
    if (got == 0) return 2;
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return 2;
    }
    p += got;
    n -= static_cast<std::size_t>(got);
  }
  return 0;
}

bool write_all(int fd, const char* p, std::size_t n, const deadline& d) {
  while (n > 0) {
    if (!wait_fd(fd, POLLOUT, d)) return false;
    const ssize_t put = ::send(fd, p, n, MSG_NOSIGNAL);
    if (put < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return false;
    }
    p += put;
    n -= static_cast<std::size_t>(put);
  }
  return true;
}

struct frame_header {
  std::int32_t tag;
  std::uint64_t length;
};

class tcp_control final : public control_plane {
 public:
  tcp_control(std::int64_t rank, std::vector<int> fds) : rank_(rank), fds_(std::move(fds)) {}
  ~tcp_control() override {
    for (const int fd : fds_)
      if (fd >= 0) ::close(fd);
  }
  std::string_view name() const override { return "tcp"; }

  bool send(std::int64_t to, int tag, const std::string& bytes, const deadline& d) override {
    const int fd = fd_for(to);
    const frame_header h{tag, bytes.size()};
    return write_all(fd, reinterpret_cast<const char*>(&h), sizeof h, d) && write_all(fd, bytes.data(), bytes.size(), d);
  }

  std::optional<std::string> recv(std::int64_t from, int tag, const deadline& d) override {
    const int fd = fd_for(from);
    frame_header h{};
    const int got = read_all(fd, reinterpret_cast<char*>(&h), sizeof h, d);
    if (got == 1) return std::nullopt;
    if (got == 2) closed(from);
    if (h.length > kMaxMessageBytes) throw std::runtime_error(fmt::format("control message of {} bytes", h.length));
    std::string out(h.length, '\0');
    const deadline rest(30);  // a message that has begun is read to its end
    const int body = read_all(fd, out.data(), out.size(), rest);
    if (body == 2) closed(from);
    if (body == 1) return std::nullopt;
    if (h.tag != tag) {
      throw std::runtime_error(fmt::format("control message out of order from rank {}: tag {} where {} was expected", from,
                                           h.tag, tag));
    }
    return out;
  }

  [[noreturn]] void abort(int status) override {
    for (int& fd : fds_) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(status);
  }

 private:
  int fd_for(std::int64_t peer) const {
    const std::int64_t i = rank_ == 0 ? peer : 0;
    if (i < 0 || i >= static_cast<std::int64_t>(fds_.size()) || fds_[static_cast<std::size_t>(i)] < 0) {
      throw std::runtime_error(fmt::format("no control connection from rank {} to rank {}", rank_, peer));
    }
    return fds_[static_cast<std::size_t>(i)];
  }
  /// The peer's end closed: the job was ended elsewhere (that rank said why); this rank follows.
  [[noreturn]] void closed(std::int64_t peer) {
    std::fprintf(stderr, "trainplan-bench: rank %lld: the connection to rank %lld closed; ending\n",
                 static_cast<long long>(rank_), static_cast<long long>(peer));
    abort(kExitHung);
  }

  std::int64_t rank_;
  std::vector<int> fds_;  ///< rank 0: one per rank (index 0 unused); others: index 0 is rank 0
};

int listen_on(int port) {
  const int fd = ::socket(AF_INET6, SOCK_STREAM, 0);
  const int v6 = fd >= 0 ? fd : ::socket(AF_INET, SOCK_STREAM, 0);
  if (v6 < 0) throw std::runtime_error(fmt::format("socket: {}", std::strerror(errno)));
  const int one = 1, zero = 0;
  ::setsockopt(v6, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int ok = -1;
  if (fd >= 0) {
    ::setsockopt(v6, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);  // IPv4 peers too
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(static_cast<std::uint16_t>(port));
    ok = ::bind(v6, reinterpret_cast<sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    ok = ::bind(v6, reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  if (ok != 0 || ::listen(v6, 1024) != 0) {
    const std::string why = std::strerror(errno);
    ::close(v6);
    throw input_error(fmt::format("port {}: rank 0 cannot listen there ({}); set TRAINPLAN_BENCH_PORT to a free port "
                                  "(by default the bench uses MASTER_PORT, or MASTER_PORT + 1 when "
                                  "TORCHELASTIC_USE_AGENT_STORE=True)",
                                  port, why));
  }
  return v6;
}

int connect_to(const std::string& addr, int port, const deadline& d) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(addr.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || res == nullptr) {
    throw input_error(fmt::format("MASTER_ADDR={}: the address does not resolve", addr));
  }
  for (;;) {  // rank 0 may not be listening yet: retry until the deadline
    for (addrinfo* p = res; p != nullptr; p = p->ai_next) {
      const int fd = ::socket(p->ai_family, p->ai_socktype, p->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, p->ai_addr, p->ai_addrlen) == 0) {
        ::freeaddrinfo(res);
        return fd;
      }
      ::close(fd);
    }
    if (d.passed()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::freeaddrinfo(res);
  return -1;
}

}  // namespace

std::shared_ptr<control_plane> connect_tcp(std::int64_t rank, std::int64_t world, const std::string& addr, int port,
                                           double timeout_s) {
  const deadline d(timeout_s);
  const int one = 1;
  if (rank != 0) {
    const int fd = connect_to(addr, port, d);
    if (fd < 0) {
      // A rank that does not answer is a hang (exit 3, docs/bench.md), not bad input.
      std::fprintf(stderr, "trainplan-bench: error: rank %lld: rank 0 did not answer at %s:%d within %.0f s\n",
                   static_cast<long long>(rank), addr.c_str(), port, timeout_s);
      std::_Exit(kExitHung);
    }
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (!write_all(fd, reinterpret_cast<const char*>(&rank), sizeof rank, d)) {
      ::close(fd);
      throw input_error(fmt::format("rank {}: could not say its rank to rank 0", rank));
    }
    return std::make_shared<tcp_control>(rank, std::vector<int>{fd});
  }
  const int listener = listen_on(port);
  std::vector<int> fds(static_cast<std::size_t>(world), -1);
  std::int64_t joined = 1;
  while (joined < world && wait_fd(listener, POLLIN, d)) {
    const int fd = ::accept(listener, nullptr, nullptr);
    if (fd < 0) continue;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::int64_t who = -1;
    if (read_all(fd, reinterpret_cast<char*>(&who), sizeof who, deadline(5)) != 0 || who < 1 || who >= world ||
        fds[static_cast<std::size_t>(who)] >= 0) {
      ::close(fd);  // not one of ours, or a rank twice
      continue;
    }
    fds[static_cast<std::size_t>(who)] = fd;
    ++joined;
  }
  ::close(listener);
  if (joined < world) {
    std::string missing;
    for (std::int64_t r = 1; r < world; ++r)
      if (fds[static_cast<std::size_t>(r)] < 0) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    for (const int fd : fds)
      if (fd >= 0) ::close(fd);
    std::fprintf(stderr, "trainplan-bench: error: torchrun-style launch: rank(s) %s did not connect to port %d within %.0f s\n",
                 missing.c_str(), port, timeout_s);
    std::_Exit(kExitHung);
  }
  return std::make_shared<tcp_control>(0, std::move(fds));
}

}  // namespace trainplan::bench
