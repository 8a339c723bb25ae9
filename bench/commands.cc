// trainplan-bench's subcommands (docs/bench.md): the job flags after "--", backends per group, the
// measurements, their renderers and the calibration profile.
#include "commands.h"

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <set>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include "backend.h"
#include "bench_stats.h"
#include "gpu.h"
#include "launch.h"
#include "measure.h"
#include "report.h"
#include "trainplan/cli/cli.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/hardware/calibration.h"
#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/estimate/compute.h"
#include "trainplan/core/base/error.h"

namespace trainplan::bench {

namespace {

bool g_measuring = false;

output_format format_of(const common_options& c) {
  if (c.json && c.csv) throw input_error("--json and --csv: give one output format");
  if (c.json) return output_format::json;
  if (c.csv) return output_format::csv;
  if (c.format == "json") return output_format::json;
  if (c.format == "csv") return output_format::csv;
  if (c.format == "text") return output_format::text;
  throw input_error("--format: unknown value '" + c.format + "'" + did_you_mean(c.format, {"text", "json", "csv"}) +
                    "; one of: text, json, csv");
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

run_context context_of(const world_info& w, const std::string& command, const std::string& backend) {
  run_context c;
  c.command = command;
  c.backend = backend;
  c.launcher = w.self.launcher;
  c.world = w.self.world;
  c.nodes = w.self.num_nodes;
  c.host = w.self.host;
  c.mpi_version = w.mpi_version;
  c.created_utc = utc_now();
  return c;
}

dtype parse_dtype(const std::string& v) {
  static const std::vector<std::pair<std::string, dtype>> table = {
      {"bf16", dtype::bf16}, {"fp16", dtype::fp16}, {"fp8", dtype::fp8}, {"tf32", dtype::tf32}, {"fp32", dtype::fp32}};
  std::vector<std::string> names;
  for (const auto& [n, d] : table) {
    if (n == v) return d;
    names.push_back(n);
  }
  throw input_error("--dtype: unknown value '" + v + "'" + did_you_mean(v, names) + "; one of: bf16, fp16, fp8, tf32, fp32");
}

collective_kind parse_op(const std::string& v) {
  std::vector<std::string> names;
  for (const collective_kind k : {collective_kind::all_reduce, collective_kind::all_gather, collective_kind::reduce_scatter,
                                  collective_kind::all_to_all, collective_kind::broadcast, collective_kind::send_recv}) {
    if (to_string(k) == v) return k;
    names.emplace_back(to_string(k));
  }
  throw input_error("--ops: unknown collective '" + v + "'" + did_you_mean(v, names) +
                    "; one of: all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv");
}

enum class backend_choice { nccl, mpi, star };

/// --backend: auto is NCCL when a GPU is visible, else MPI when the ranks share an MPI world (mpirun,
/// srun), else the star through rank 0 (a torchrun-style launch without GPUs).
backend_choice choose_backend(const common_options& c, const world_info& w) {
  if (c.backend == "nccl") return backend_choice::nccl;
  if (c.backend == "star") return backend_choice::star;
  if (c.backend == "mpi") {
    if (!w.mpi_world()) {
      throw input_error("--backend mpi: these ranks were not started by mpirun or srun (torchrun-style launch); use "
                        "--backend nccl or star");
    }
    return backend_choice::mpi;
  }
  if (c.backend == "auto") return gpu_available() ? backend_choice::nccl : w.mpi_world() ? backend_choice::mpi : backend_choice::star;
  throw input_error("--backend: unknown value '" + c.backend + "'" + did_you_mean(c.backend, {"auto", "nccl", "mpi", "star"}) +
                    "; one of: auto, nccl, mpi, star");
}

constexpr int kTagNcclIds = 7400;

std::string backend_name(backend_choice b) {
  return b == backend_choice::nccl ? "nccl" : b == backend_choice::mpi ? "mpi" : "star";
}

/// This rank's backend for its group: `members` are the group's world ranks, `key` its index among the
/// `groups` groups of a dimension. Every rank of the world calls it at once.
std::unique_ptr<collective_backend> group_backend(backend_choice b, const world_info& w,
                                                  const std::vector<std::int64_t>& members, std::int64_t key,
                                                  std::int64_t groups, double timeout_s) {
  g_measuring = true;
  const auto at = std::find(members.begin(), members.end(), w.self.rank);
  const std::int64_t group_rank = at - members.begin();
  const auto size = static_cast<std::int64_t>(members.size());
  switch (b) {
    case backend_choice::mpi: {
      MPI_Comm sub = MPI_COMM_NULL;
      MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(key), static_cast<int>(w.self.rank), &sub);
      return make_mpi_backend(sub, w);
    }
    case backend_choice::nccl: {
      std::string ids;
      if (w.self.rank == 0)
        for (std::int64_t g = 0; g < groups; ++g) ids += new_nccl_id();
      if (!broadcast(w, ids, kTagNcclIds, timeout_s)) abort_hung(w, "sharing the NCCL ids", {0});
      const std::size_t one = ids.size() / static_cast<std::size_t>(std::max<std::int64_t>(1, groups));
      return make_nccl_backend(w, group_rank, size, ids.substr(static_cast<std::size_t>(key) * one, one), timeout_s);
    }
    case backend_choice::star: return make_star_backend(w, key, group_rank, size);
  }
  return nullptr;
}

/// The whole world as one group.
std::unique_ptr<collective_backend> world_backend(backend_choice b, const world_info& w, double timeout_s) {
  std::vector<std::int64_t> all(static_cast<std::size_t>(w.self.world));
  for (std::int64_t r = 0; r < w.self.world; ++r) all[static_cast<std::size_t>(r)] = r;
  return group_backend(b, w, all, 0, 1, timeout_s);
}

/// The planner's job from the flags after "--"; the world size and GPUs per node default to the run's.
parsed_job job_for_world(const std::vector<std::string>& args, const world_info& w) {
  std::vector<std::string> a = args;
  auto given = [&](std::initializer_list<const char*> names) {
    for (const std::string& x : args)
      for (const char* n : names)
        if (x == n || x.rfind(std::string(n) + "=", 0) == 0) return true;
    return false;
  };
  if (!given({"--num-gpus", "--world-size", "--num-nodes", "--nnodes", "--dp", "--data-parallel-size"})) {
    a.insert(a.end(), {"--num-gpus", std::to_string(w.self.world)});
  }
  if (!given({"--gpus-per-node"})) a.insert(a.end(), {"--gpus-per-node", std::to_string(w.self.local_size)});
  parsed_job pj = parse_job_args(a);
  if (pj.job.num_gpus != w.self.world) {
    throw input_error(fmt::format("the job has {} GPUs but {} ranks were launched: start one rank per GPU of the job "
                                  "(mpirun -np {})",
                                  pj.job.num_gpus, w.self.world, pj.job.num_gpus));
  }
  return pj;
}

void write_profile(const std::string& path, const calibration_profile& p) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) throw input_error("--calibration-out: cannot write '" + path + "'");
    out << calibration_to_json(p);
    if (!out) throw input_error("--calibration-out: cannot write '" + path + "'");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw input_error("--calibration-out: cannot write '" + path + "'");
}

calibration_profile profile_base(const world_info& w, const std::string& backend) {
  calibration_profile p;
  p.created_utc = utc_now();
  p.host = w.self.host;
  p.backend = backend;
  p.mpi_version = w.mpi_version;
  return p;
}

/// With --calibration-out: a profile of this host and backend, filled by `fill`, written atomically.
template <class Fill>
void write_profile_if_asked(const world_info& w, const common_options& c, const std::string& backend, Fill&& fill) {
  if (c.calibration_out.empty()) return;
  calibration_profile p = profile_base(w, backend);
  fill(p);
  write_profile(c.calibration_out, p);
}

void add_gpu_facts(calibration_profile& p, const gpu_device_info& g) {
  p.gpu_name = g.name;
  p.gpu_catalog_name = g.catalog_name;
  p.sm_count = g.sm_count;
  p.driver_version = g.driver_version;
  p.cuda_runtime_version = g.cuda_runtime_version;
  p.cublaslt_version = g.cublaslt_version;
  p.nccl_version = g.nccl_version;
}

// ---- gemm ---------------------------------------------------------------------------------------

std::vector<gemm_request> gemm_requests(const gemm_options& g, const common_options& c) {
  std::vector<dtype> dtypes;
  for (const std::string& d : g.dtypes) dtypes.push_back(parse_dtype(d));
  std::vector<gemm_request> out;
  if (!c.job_args.empty()) {
    const parsed_job pj = parse_job_args(c.job_args);
    std::vector<named_gemm> shapes = layer_gemm_shapes(pj.job, false);
    if (pj.job.model.is_moe()) {
      for (const named_gemm& x : layer_gemm_shapes(pj.job, true))
        if (x.name.rfind("expert", 0) == 0 || x.name == "router" || x.name.rfind("shared", 0) == 0) shapes.push_back(x);
    }
    for (const dtype d : dtypes) {
      for (const named_gemm& x : shapes) {
        const gemm_shape& s = x.shape;
        out.push_back({fmt::format("{}.fwd", x.name), d, s});
        out.push_back({fmt::format("{}.dgrad", x.name), d, {s.m, s.k, s.n, s.batch}});
        out.push_back({fmt::format("{}.wgrad", x.name), d, {s.k, s.n, s.m, s.batch}});
      }
    }
  }
  for (const std::string& text : g.shapes) {
    const std::array<std::int64_t, 4> d = parse_gemm_shape(text, "--shapes");
    for (const dtype p : dtypes) out.push_back({"shape", p, {d[0], d[1], d[2], d[3]}});
  }
  if (g.grid || (c.job_args.empty() && g.shapes.empty())) {
    if (g.grid_min < 16 || g.grid_max < g.grid_min || g.grid_max > 65536) {
      throw input_error(fmt::format("--grid-min/--grid-max: need 16 ≤ min ≤ max ≤ 65536, got {} and {}", g.grid_min, g.grid_max));
    }
    for (const dtype d : dtypes)
      for (std::int64_t m = g.grid_min; m <= g.grid_max; m *= 2)
        for (std::int64_t n = g.grid_min; n <= g.grid_max; n *= 2)
          for (std::int64_t k = g.grid_min; k <= g.grid_max; k *= 2) out.push_back({"grid", d, {m, n, k, 1}});
  }
  return out;
}

gemm_report measure_gemms(const world_info& w, const gemm_options& g, const common_options& c, bool progress) {
  if (g.warmup < 0 || g.warmup > 10000) throw input_error(fmt::format("--warmup must be between 0 and 10000, got {}", g.warmup));
  if (g.samples < 1 || g.samples > 100000) {
    throw input_error(fmt::format("--samples must be between 1 and 100000, got {}", g.samples));
  }
  if (g.algorithms < 1 || g.algorithms > 64) {
    throw input_error(fmt::format("--algorithms must be between 1 and 64, got {}", g.algorithms));
  }
  if (g.device < -1) throw input_error(fmt::format("--device must not be negative, got {}", g.device));
  const std::vector<gemm_request> reqs = gemm_requests(g, c);
  gemm_timing t;
  t.warmup = g.warmup;
  t.samples = g.samples;
  t.algorithms = g.algorithms;
  t.reference = !g.no_reference;
  gemm_report rep;
  g_measuring = true;
  const int device = g.device >= 0 ? g.device : static_cast<int>(w.self.local_rank % std::max(1, gpu_count()));
  rep.gpu = gpu_info(device);
  const gpu_spec* spec = rep.gpu.catalog_name.empty() ? nullptr : &find_gpu(rep.gpu.catalog_name);
  const compute_efficiency model = spec != nullptr ? effective_compute_efficiency(*spec) : compute_efficiency{};
  auto show = [&](std::size_t i, std::size_t n) {
    if (progress) std::fprintf(stderr, "\r\033[Kgemm: %zu/%zu%s", i, n, i == n ? "\r\033[K" : "");
  };
  for (const gemm_result& r : run_gemms(device, reqs, t, show)) {
    gemm_row row;
    row.measured = r;
    const gemm_shape& s = r.request.shape;
    const double flops = 2.0 * s.m * s.n * s.k * s.batch;
    row.flops_per_s = flops / r.time_s;
    row.heuristic_flops_per_s = flops / r.heuristic_time_s;
    row.reference_flops_per_s = r.reference_time_s > 0 ? flops / r.reference_time_s : 0;
    if (spec != nullptr && spec->peak_flops(r.request.precision) > 0) {
      row.peak_flops_per_s = spec->peak_flops(r.request.precision);
      row.efficiency = row.flops_per_s / row.peak_flops_per_s;
      row.predicted_efficiency = estimate_gemm(*spec, model, r.request.precision, s).efficiency;
    }
    rep.rows.push_back(row);
  }
  return rep;
}

void profile_gemms(calibration_profile& p, const gemm_report& r) {
  add_gpu_facts(p, r.gpu);
  for (const gemm_row& g : r.rows) {
    const gemm_request& q = g.measured.request;
    p.gemms.push_back({q.precision, q.shape.m, q.shape.n, q.shape.k, q.shape.batch, g.measured.time_s, g.flops_per_s});
  }
}

memory_report measure_memory(const world_info& w, const memory_flags& m, int device_flag) {
  if (m.buffer_mib < 1 || m.buffer_mib > (1 << 20)) throw input_error("--buffer-mib must be between 1 and 1048576");
  if (m.samples < 1 || m.samples > 100000) throw input_error("--samples must be between 1 and 100000");
  memory_report rep;
  g_measuring = true;
  const int device = device_flag >= 0 ? device_flag : static_cast<int>(w.self.local_rank % std::max(1, gpu_count()));
  rep.gpu = gpu_info(device);
  const gpu_spec* spec = rep.gpu.catalog_name.empty() ? nullptr : &find_gpu(rep.gpu.catalog_name);
  for (const copy_result& c : run_copies(device, m.buffer_mib << 20, m.samples)) {
    memory_row row{c, 0, 0};
    if (c.what == "device_to_device" && spec != nullptr) {
      row.datasheet_bytes_per_s = spec->memory_bandwidth_bytes_per_s;
      row.fraction = c.bytes_per_s / row.datasheet_bytes_per_s;
    }
    rep.rows.push_back(row);
  }
  return rep;
}

void profile_memory(calibration_profile& p, const memory_report& r) {
  add_gpu_facts(p, r.gpu);
  for (const memory_row& m : r.rows) {
    if (m.measured.what == "device_to_device") p.device_copy_bytes_per_s = m.measured.bytes_per_s;
    if (m.measured.what == "host_to_device") p.host_to_device_bytes_per_s = m.measured.bytes_per_s;
    if (m.measured.what == "device_to_host") p.device_to_host_bytes_per_s = m.measured.bytes_per_s;
  }
}

// ---- collectives --------------------------------------------------------------------------------

sweep_options sweep_of(const sweep_flags& f, bool gpu, double timeout_s) {
  sweep_options o;
  for (const std::string& op : f.ops) o.ops.push_back(parse_op(op));
  if (o.ops.empty()) {
    o.ops = {collective_kind::all_reduce, collective_kind::all_gather, collective_kind::reduce_scatter,
             collective_kind::all_to_all, collective_kind::broadcast,  collective_kind::send_recv};
  }
  const std::int64_t lo = parse_size(f.min_bytes, "--min-bytes");
  const std::int64_t hi = parse_size(f.max_bytes.empty() ? (gpu ? "256M" : "4M") : f.max_bytes, "--max-bytes");
  const std::int64_t factor = f.step_factor.empty() ? (gpu ? 2 : 4) : parse_size(f.step_factor, "--step-factor");
  if (!gpu && hi > (std::int64_t{1} << 32)) throw input_error("--max-bytes: the MPI path takes at most 4G (2^30 float32 elements)");
  o.sizes_bytes = size_sweep(lo, hi, factor, "--min-bytes/--max-bytes");
  if (f.warmup < 0 || f.warmup > 10000) throw input_error("--warmup must be between 0 and 10000");
  if (f.iters < 1 || f.iters > 100000) throw input_error("--iters must be between 1 and 100000");
  o.warmup = f.warmup;
  o.iters = f.iters;
  o.check = !f.no_check;
  o.timeout_s = timeout_s;
  return o;
}

std::int64_t nodes_spanned(const world_info& w, const std::vector<std::int64_t>& ranks) {
  std::set<std::int64_t> nodes;
  for (const std::int64_t r : ranks) nodes.insert(w.nodes[static_cast<std::size_t>(r)]);
  return static_cast<std::int64_t>(nodes.size());
}

/// The ops each parallel dimension's groups run in a training step (docs/formulas.md §4.2).
struct dim_ops {
  parallel_dim dim;
  std::vector<collective_kind> ops;
};
const std::vector<dim_ops>& layout_ops() {
  static const std::vector<dim_ops> t = {
      {parallel_dim::tp, {collective_kind::all_reduce, collective_kind::all_gather, collective_kind::reduce_scatter}},
      {parallel_dim::cp, {collective_kind::all_gather, collective_kind::send_recv}},
      {parallel_dim::ep, {collective_kind::all_to_all}},
      {parallel_dim::dp, {collective_kind::all_reduce, collective_kind::reduce_scatter, collective_kind::all_gather}},
      {parallel_dim::pp, {collective_kind::send_recv}}};
  return t;
}

/// `modelled_on` gets the cluster whose model gives the predicted times (the job's), or stays empty.
std::vector<collective_row> measure_collectives(const world_info& w, const sweep_flags& f, const common_options& c,
                                                backend_choice b, std::string& library, std::string& modelled_on) {
  sweep_options o = sweep_of(f, b == backend_choice::nccl, c.timeout_s);
  o.progress = isatty(2) != 0;
  int step = 0;
  std::vector<collective_row> rows;
  if (c.job_args.empty()) {
    auto be = world_backend(b, w, c.timeout_s);
    library = be->version();
    return run_sweep(w, *be, o, "world", 0, w.self.num_nodes, {}, step);
  }
  // The planner's own groups: every group of a dimension measured at once, as the job runs them.
  const parsed_job pj = job_for_world(c.job_args, w);
  modelled_on = pj.job.cluster.name;
  for (const dim_ops& d : layout_ops()) {
    const comm_group_set groups = process_groups(pj.job, d.dim);
    if (groups.group_size <= 1) continue;
    std::size_t mine = 0;
    for (std::size_t g = 0; g < groups.ranks.size(); ++g)
      for (const std::int64_t r : groups.ranks[g])
        if (r == w.self.rank) mine = g;
    sweep_options od = o;
    if (f.ops.empty()) od.ops = d.ops;
    const group_placement where = placement_of(pj.job, d.dim);
    const cluster_spec cluster = pj.job.cluster;
    const predictor predict = [&](collective_kind k, double bytes) { return collective_time_s(cluster, k, bytes, where); };
    auto be = group_backend(b, w, groups.ranks[mine], static_cast<std::int64_t>(mine),
                            static_cast<std::int64_t>(groups.ranks.size()), c.timeout_s);
    library = be->version();
    std::vector<collective_row> r = run_sweep(w, *be, od, std::string(to_string(d.dim)), static_cast<std::int64_t>(mine),
                                              nodes_spanned(w, groups.ranks[mine]), predict, step);
    // Rank 0 of the world reports its own group of each dimension.
    if (w.self.rank == 0) rows.insert(rows.end(), r.begin(), r.end());
  }
  return rows;
}

void profile_collectives(calibration_profile& p, const std::vector<collective_row>& rows) {
  for (const collective_row& r : rows) {
    if (r.ranks < 2) continue;
    measured_collective* m = nullptr;
    for (measured_collective& x : p.collectives)
      if (x.kind == r.kind && x.ranks == r.ranks && x.nodes == r.nodes) m = &x;
    if (m == nullptr) {
      p.collectives.push_back({r.kind, r.ranks, r.nodes, r.nodes > 1 ? link_class::inter_node : link_class::intra_node, {}});
      m = &p.collectives.back();
    }
    m->points.push_back({static_cast<double>(r.bytes), r.time_s, r.algbw_bytes_per_s, r.busbw_bytes_per_s});
  }
}

bool any_errors(const std::vector<collective_row>& rows) {
  for (const collective_row& r : rows)
    if (r.errors > 0) return true;
  return false;
}

// ---- the subcommand table -----------------------------------------------------------------------

}  // namespace

bool measuring_started() { return g_measuring; }

void emit(const world_info& w, const std::string& text) {
  if (w.self.rank == 0) std::cout << text << std::flush;
}


int run_gemm(const world_info& w, all_options& o) {
  const output_format f = format_of(o.common);
  if (w.self.rank != 0) return 0;  // one GPU's table; run one rank per node to measure each node
  const gemm_report r = measure_gemms(w, o.gemm, o.common, isatty(2) != 0);
  run_context ctx = context_of(w, "gemm", "cuda");
  ctx.library_version = "cuBLASLt " + r.gpu.cublaslt_version;
  emit(w, render_gemm(ctx, r, f));
  write_profile_if_asked(w, o.common, "cuda", [&](calibration_profile& p) { profile_gemms(p, r); });
  return 0;
}

int run_memory(const world_info& w, all_options& o) {
  const output_format f = format_of(o.common);
  if (w.self.rank != 0) return 0;
  const memory_report r = measure_memory(w, o.memory, o.gemm.device);
  emit(w, render_memory(context_of(w, "memory", "cuda"), r, f));
  write_profile_if_asked(w, o.common, "cuda", [&](calibration_profile& p) { profile_memory(p, r); });
  return 0;
}

int run_collectives(const world_info& w, all_options& o) {
  const output_format f = format_of(o.common);
  const backend_choice b = choose_backend(o.common, w);
  const bool gpu = b == backend_choice::nccl;
  std::string library;
  std::string modelled_on;
  const std::vector<collective_row> rows = measure_collectives(w, o.sweep, o.common, b, library, modelled_on);
  run_context ctx = context_of(w, "collectives", backend_name(b));
  ctx.library_version = library;
  ctx.modelled_cluster = modelled_on;
  emit(w, render_collectives(ctx, rows, f));
  if (w.self.rank == 0) {
    write_profile_if_asked(w, o.common, backend_name(b), [&](calibration_profile& p) {
      if (gpu) add_gpu_facts(p, gpu_info(static_cast<int>(w.self.local_rank % std::max(1, gpu_count()))));
      profile_collectives(p, rows);
    });
  }
  return any_errors(rows) ? kExitSlow : 0;
}

int run_health_cmd(const world_info& w, all_options& o) {
  const output_format f = format_of(o.common);
  const backend_choice b = choose_backend(o.common, w);
  const bool gpu = b == backend_choice::nccl;
  health_options h;
  if (!(o.health.threshold_pct > 0 && o.health.threshold_pct < 100)) {
    throw input_error(fmt::format("--threshold-pct must be between 0 and 100, got {}", o.health.threshold_pct));
  }
  h.threshold = o.health.threshold_pct / 100;
  if (o.health.repeats < 3 || o.health.repeats > 1000) {
    throw input_error(fmt::format("--repeats must be between 3 and 1000 (a spread needs three), got {}", o.health.repeats));
  }
  h.repeats = o.health.repeats;
  if (!(o.health.z_score >= 0 && o.health.z_score <= 100)) {
    throw input_error(fmt::format("--z must be between 0 and 100, got {}", o.health.z_score));
  }
  h.z_score = o.health.z_score;
  h.timeout_s = o.common.timeout_s;
  h.slowdown = parse_slowdown(o.health.inject_slowdown, "--inject-slowdown");
  if (h.slowdown && h.slowdown->rank >= w.self.world) {
    throw input_error(fmt::format("--inject-slowdown: rank {} does not exist (world size {})", h.slowdown->rank, w.self.world));
  }
  if (o.health.inject_hang >= w.self.world) {
    throw input_error(fmt::format("--inject-hang: rank {} does not exist (world size {})", o.health.inject_hang, w.self.world));
  }
  h.hang_rank = o.health.inject_hang;
  h.serial = o.health.serial;
  h.progress = isatty(2) != 0;
  auto be = world_backend(b, w, o.common.timeout_s);
  const health_report r = run_health(w, *be, gpu, h);
  run_context ctx = context_of(w, "health", backend_name(b));
  ctx.library_version = be->version();
  emit(w, render_health(ctx, r, f));
  if (w.self.rank != 0) return 0;
  return r.slow_gemm.empty() && r.slow_memory.empty() && r.all_reduce_errors == 0 ? 0 : kExitSlow;
}

int run_calibrate(const world_info& w, all_options& o) {
  if (o.common.calibration_out.empty()) throw input_error("calibrate: --calibration-out FILE is required");
  const output_format f = format_of(o.common);
  const backend_choice b = choose_backend(o.common, w);
  const bool gpu = b == backend_choice::nccl;
  calibration_profile p = profile_base(w, backend_name(b));
  if (gpu && w.self.rank == 0) {
    const gemm_report g = measure_gemms(w, o.gemm, o.common, isatty(2) != 0);
    emit(w, render_gemm(context_of(w, "calibrate", "cuda"), g, f));
    profile_gemms(p, g);
    const memory_report m = measure_memory(w, o.memory, o.gemm.device);
    emit(w, render_memory(context_of(w, "calibrate", "cuda"), m, f));
    profile_memory(p, m);
  }
  if (w.self.world > 1) {  // link sweeps: all ranks (their class by the nodes they span)
    all_options world_only = o;
    world_only.common.job_args.clear();
    if (world_only.sweep.ops.empty()) world_only.sweep.ops = {"all_reduce", "all_gather", "reduce_scatter"};
    std::string library;
    std::string modelled_on;
    const std::vector<collective_row> rows =
        measure_collectives(w, world_only.sweep, world_only.common, b, library, modelled_on);
    run_context ctx = context_of(w, "calibrate", backend_name(b));
    ctx.library_version = library;
    emit(w, render_collectives(ctx, rows, f));
    profile_collectives(p, rows);
  }
  if (w.self.rank == 0) write_profile(o.common.calibration_out, p);
  return 0;
}

}  // namespace trainplan::bench
