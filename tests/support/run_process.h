// Tests that run a built program: one shell command, its exit status, stdout and stderr, and how long
// it took. Shared by the CLI tests and the bench's MPI tests.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace trainplan::testing {

struct run_result {
  int status = -1;  ///< exit status, or -1 when the process did not exit normally
  std::string out;
  std::string err;
  double seconds = 0;
};

/// `s` quoted for /bin/sh.
inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  q += "'";
  return q;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Runs `prefix` (a shell fragment: environment, launcher, program) followed by `args`, each quoted;
/// stdout through a pipe, stderr through a temporary file.
inline run_result run_command(const std::string& prefix, const std::vector<std::string>& args) {
  static int counter = 0;
  std::string err_path = ::testing::TempDir();
  err_path.append("run_stderr_").append(std::to_string(::getpid())).append("_").append(std::to_string(counter++));
  std::string cmd = prefix;
  for (const auto& a : args) cmd.append(" ").append(shell_quote(a));
  cmd.append(" 2>").append(shell_quote(err_path));
  run_result r;
  const auto t0 = std::chrono::steady_clock::now();
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "popen failed: " << cmd;
    return r;
  }
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.out.append(buf, n);
  const int raw = ::pclose(pipe);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.err = read_file(err_path);
  std::remove(err_path.c_str());
  return r;
}

}  // namespace trainplan::testing
