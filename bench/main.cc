// trainplan-bench: measures what the planner predicts (GEMMs, copies, collectives), finds slow, dead
// and hung ranks, and writes a calibration profile the planner reads (docs/bench.md). One process per
// GPU under mpirun or srun. Exit status: 0 ok, 1 slow ranks found or wrong results, 2 bad input,
// 3 a rank that did not answer, 4 an internal or CUDA error.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.h"
#include "launch.h"
#include "trainplan/cli/cli.h"
#include "trainplan/core/base/error.h"

namespace {

using namespace trainplan;
using namespace trainplan::bench;

struct subcommand {
  const char* name;
  const char* summary;
  std::function<void(CLI::App&, all_options&)> flags;
  std::function<int(const world_info&, all_options&)> run;
};

void gemm_flags(CLI::App& a, all_options& o) {
  a.add_option("--dtype", o.gemm.dtypes, "precisions: bf16, fp16, fp8 (e4m3, bf16 output), tf32, fp32")
      ->delimiter(',')
      ->capture_default_str();
  a.add_option("--shapes", o.gemm.shapes, "GEMMs MxNxK[xBATCH], comma-separated (C[m×n] = A[m×k]·B[k×n])")->delimiter(',');
  a.add_flag("--grid", o.gemm.grid, "also the grid of m, n, k (always when neither job flags nor --shapes are given)");
  a.add_option("--grid-min", o.gemm.grid_min, "smallest grid dimension")->capture_default_str();
  a.add_option("--grid-max", o.gemm.grid_max, "largest grid dimension (powers of 2 from --grid-min)")->capture_default_str();
  a.add_option("--warmup", o.gemm.warmup, "untimed runs per candidate")->capture_default_str();
  a.add_option("--samples", o.gemm.samples, "timed samples per candidate (median reported)")->capture_default_str();
  a.add_option("--algorithms", o.gemm.algorithms, "cuBLASLt heuristic candidates timed (the fastest is reported)")
      ->capture_default_str();
  a.add_flag("--no-reference", o.gemm.no_reference, "skip the cublasGemmEx reference timing");
  a.add_option("--device", o.gemm.device, "GPU index (default: the local rank)");
}

void sweep_cli(CLI::App& a, all_options& o) {
  a.add_option("--ops", o.sweep.ops, "collectives (default: all; with job flags, each dimension's own)")->delimiter(',');
  a.add_option("--min-bytes", o.sweep.min_bytes, "smallest size S (nccl-tests -b)")->capture_default_str();
  a.add_option("--max-bytes", o.sweep.max_bytes, "largest size S (nccl-tests -e) [default: 256M with NCCL, 4M with MPI]");
  a.add_option("--step-factor", o.sweep.step_factor, "each size × this (nccl-tests -f) [default: 2 with NCCL, 4 with MPI]");
  a.add_option("--warmup", o.sweep.warmup, "untimed ops per size")->capture_default_str();
  a.add_option("--iters", o.sweep.iters, "timed ops per size (mean reported)")->capture_default_str();
  a.add_flag("--no-check", o.sweep.no_check, "skip the checked run of every size");
}

const std::vector<subcommand>& subcommands() {
  static const std::vector<subcommand> t = {
      {"gemm", "cuBLASLt GEMMs: a model's shapes (job flags after --) and a grid; TFLOP/s, % of peak, the planner's %",
       gemm_flags, run_gemm},
      {"memory", "device-to-device and host<->device copy bandwidth of one GPU",
       [](CLI::App& a, all_options& o) {
         a.add_option("--buffer-mib", o.memory.buffer_mib, "copy size, MiB")->capture_default_str();
         a.add_option("--samples", o.memory.samples, "timed samples (median reported)")->capture_default_str();
         a.add_option("--device", o.gemm.device, "GPU index (default: the local rank)");
       },
       run_memory},
      {"collectives", "nccl-tests-style sweeps on NCCL or MPI: time, algbw, busbw, checked; the planner's groups with job flags",
       sweep_cli, run_collectives},
      {"health", "every rank: connectivity, GEMM, memory, all-reduce, send/recv; names slow and hung ranks and nodes",
       [](CLI::App& a, all_options& o) {
         a.add_option("--threshold-pct", o.health.threshold_pct,
                      "slower than the other ranks' median by more than this is named ...")
             ->capture_default_str();
         a.add_option("--z", o.health.z_score, "... and by more than this many σ of the repeats' spread")
             ->capture_default_str();
         a.add_option("--repeats", o.health.repeats, "each probe this many times on each rank (3 or more)")
             ->capture_default_str();
         a.add_option("--inject-slowdown", o.health.inject_slowdown, "test aid: RANK:FACTOR makes that rank's probes slower");
         a.add_option("--inject-hang", o.health.inject_hang, "test aid: that rank stops answering");
         a.add_flag("--serial", o.health.serial, "ranks run the probes in turn (ranks sharing cores or a GPU)");
       },
       run_health_cmd},
      {"calibrate", "gemm grid + memory + world collectives, written as a profile (--calibration-out) the planner reads",
       [](CLI::App& a, all_options& o) {
         gemm_flags(a, o);
         a.add_option("--ops", o.sweep.ops, "collectives swept (default: all_reduce, all_gather, reduce_scatter)")->delimiter(',');
         a.add_option("--min-bytes", o.sweep.min_bytes, "smallest size S")->capture_default_str();
         a.add_option("--max-bytes", o.sweep.max_bytes, "largest size S [default: 256M with NCCL, 4M with MPI]");
         a.add_option("--step-factor", o.sweep.step_factor, "each size × this");
         a.add_option("--iters", o.sweep.iters, "timed ops per size")->capture_default_str();
       },
       run_calibrate},
  };
  return t;
}

int run(int argc, char** argv, const world_info& w) {
  CLI::App app{"trainplan-bench: measure GEMMs, copies and collectives on the real cluster, find slow and hung ranks, "
               "and write a calibration profile for trainplan (--calibration FILE). One process per GPU: "
               "mpirun -np N trainplan-bench health"};
  app.require_subcommand(1);
  all_options o;
  for (const subcommand& s : subcommands()) {
    CLI::App* sub = app.add_subcommand(s.name, s.summary);
    sub->add_option("--format", o.common.format, "text, json or csv")->capture_default_str();
    sub->add_flag("--json", o.common.json, "= --format json");
    sub->add_flag("--csv", o.common.csv, "= --format csv");
    sub->add_option("--timeout-s", o.common.timeout_s, "a step that takes longer names the rank that did not answer")
        ->capture_default_str();
    if (std::string(s.name) != "health") {  // health measures a probe per rank, not a profile
      sub->add_option("--calibration-out", o.common.calibration_out, "write what was measured as a calibration profile");
    }
    if (std::string(s.name) != "gemm" && std::string(s.name) != "memory") {
      sub->add_option("--backend", o.common.backend,
                      "auto (NCCL with a GPU, else MPI, else star), nccl, mpi, or star (through rank 0)")
          ->capture_default_str();
    }
    sub->add_option("job", o.common.job_args, "the planner's job flags after --, e.g. -- --model llama3-8b --tp 2");
    s.flags(*sub, o);
  }
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> names;
    for (const subcommand& s : subcommands()) names.emplace_back(s.name);
    if (std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      throw input_error(fmt::format("unknown command '{}'{}; one of: {}", argv[1], did_you_mean(argv[1], names),
                                    fmt::join(names, ", ")));
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    emit(w, app.help(app.get_subcommands().empty() ? "" : app.get_subcommands().front()->get_name()));
    return 0;
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    if (const auto* unknown = dynamic_cast<const CLI::ExtrasError*>(&e)) msg = unknown->what();
    throw input_error(msg + " (see trainplan-bench <command> --help)");
  }
  if (!(o.common.timeout_s > 0 && o.common.timeout_s <= 86400)) {
    throw input_error(fmt::format("--timeout-s must be between 0 and 86400 s, got {}", o.common.timeout_s));
  }
  for (const subcommand& s : subcommands()) {
    if (app.got_subcommand(s.name)) return s.run(w, o);
  }
  return 2;
}

/// --timeout-s as given (the ranks meet before the flags are parsed), else 60 s.
double startup_timeout_s(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--timeout-s") {
      char* end = nullptr;
      const double v = std::strtod(argv[i + 1], &end);
      if (end != argv[i + 1] && *end == '\0' && v > 0 && v <= 86400) return v;
    }
  }
  return 60;
}

}  // namespace

int main(int argc, char** argv) {
  world_info w;
  try {
    w = start_world(argc, argv, startup_timeout_s(argc, argv));
  } catch (const input_error& e) {
    std::fprintf(stderr, "trainplan-bench: error: %s\n", e.what());
    MPI_Finalize();
    return 2;
  }
  int status = 0;
  try {
    status = run(argc, argv, w);
  } catch (const input_error& e) {
    if (w.self.rank == 0 || measuring_started()) {
      const std::string who = w.self.world > 1 && measuring_started() ? w.self.device_name() + ": " : "";
      std::fprintf(stderr, "trainplan-bench: error: %s%s\n", who.c_str(), cli_message(e).c_str());
    }
    status = 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trainplan-bench: internal error on %s (rank %lld): %s\n", w.self.device_name().c_str(),
                 static_cast<long long>(w.self.rank), e.what());
    status = kExitInternal;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  if ((status == 2 && measuring_started()) || status == kExitInternal) {
    // Peers may be waiting in a collective for this rank: end them all with the same status.
    if (w.self.world > 1) MPI_Abort(MPI_COMM_WORLD, status);
  }
  MPI_Finalize();
  return status;
}
