// Validation against measured runs (docs/formulas.md §5.8).
#include "trainplan/cli/validate.h"
#include "shipped_errors.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <sstream>
#include <system_error>

#include <fmt/format.h>

#include "csv.h"
#include "parse.h"
#include "measurements.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/base/input_text.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/base/limits.h"
#include "trainplan/core/model/model.h"
#include "trainplan/core/estimate/compute.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/estimate/time.h"

namespace trainplan {

namespace {

using row_map = std::map<std::string, std::string>;

/// The second published table (rows 59-180): no constant was fitted on it; its rows count apart.
constexpr const char* kPublishedMoreTable = "published-measurements-more.csv";

using detail::split_csv_line;

std::string field(const row_map& r, const std::string& key) {
  auto it = r.find(key);
  return it == r.end() ? "" : it->second;
}

/// Environment of the BLOOM prequel runs (seeds/000): before the PCIe/NUMA fix of 2022-02-25 runs were
/// 1-5% slower; we take the middle, 3%. A table so that other environments can be added.
struct environment_note {
  const char* before_date;
  double slowdown;
  const char* reason;
};
constexpr environment_note kEnvironmentNotes[] = {
    {"2022-02-25", 1.03, "Jean Zay A100 PCIe/NUMA fix of 2022-02-25 raised TFLOPs 1-5%"},
};

/// Rows whose CSV value contradicts the seed's own text, corrected here with the reason.
struct row_correction {
  int source_line;
  const char* column;
  const char* value;
  const char* reason;
};
constexpr row_correction kCorrections[] = {
    {525, "gbs", "512", "seed heading 'NHIDDEN=14336 / NLAYERS=6 / GBS=512'; its table repeats 2048"},
    {526, "gbs", "512", "seed heading 'NHIDDEN=14336 / NLAYERS=6 / GBS=512'; its table repeats 2048"},
    {527, "gbs", "512", "seed heading 'NHIDDEN=14336 / NLAYERS=6 / GBS=512'; its table repeats 2048"},
};

/// The seed's tables (seeds/000_…): rows measured the same day with one thing varied, by source line.
struct seed_group {
  const char* name;
  std::vector<int> lines;
};
const std::vector<seed_group>& seed_groups() {
  static const std::vector<seed_group> g = {
      {"02-17 fp16 scaling", {316, 321, 323}},
      {"02-17 bf16 scaling", {340, 345, 347}},
      {"02-20 PP sweep", {388, 389, 390, 391, 392, 393, 394, 395, 396}},
      {"02-20 MBS at PP6", {390, 415, 416, 417}},
      {"02-20 MBS at PP10", {394, 420, 421, 422}},
      {"02-20 MBS at PP11", {395, 425, 426, 427}},
      {"02-20 MBS at PP12", {396, 430, 431}},
      {"02-20 hidden 14400 vs 13824", {464, 465, 466, 467, 468}},
      {"02-21 14336/72 PP12 MBS", {485, 486, 487, 488}},
      {"02-21 14336/72 PP6 MBS", {490, 491, 492}},
      {"02-21 13824/84", {504, 505, 506, 507}},
      {"02-21 ZeRO 0 vs 1", {534, 535}},
      {"02-23 final round", {547, 548, 553, 554, 555, 560, 565, 566}},
      {"02-23 heads at 14336", {576, 577, 578, 579}},
      {"02-23 heads at 13824", {560, 588, 589}},
      {"02-24 heads at 12288", {548, 603, 604}},
      {"02-25 GBS", {613, 614, 615, 616, 617, 618, 619}},
      {"02-25 lower PP", {624, 625, 626, 627, 628}},
      {"02-25 TP", {634, 635, 636, 637, 638, 639, 642, 643, 644}},
      {"02-26 heads at 13824 TP4", {658, 659, 660, 661, 662, 663, 664, 665, 666}},
      {"02-26 heads at 14336", {671, 672, 673, 674, 675}},
      {"02-26 13312", {680, 681, 682}},
      {"02-26 GBS warm-up", {689, 690, 691, 692}},
      {"02-27 re-do", {701, 702, 704}},
      {"02-28 12288/106", {722, 723, 724, 725}},
      {"02-28 13312/82", {738, 739, 740, 741, 742}},
      {"02-28 14336/70", {752, 753, 754, 755, 756}},
  };
  return g;
}

/// Layers of a row that states only a size label: the multiple of PP whose parameter count (BLOOM's
/// embedding conventions) is nearest the label.
std::int64_t resolve_layers(std::int64_t pp, std::int64_t hidden, std::int64_t heads, double label_params) {
  model_spec m = find_model("bloom-176b").spec;
  m.hidden_size = hidden;
  m.kv_channels = 0;
  m.num_attention_heads = heads;
  m.num_query_groups = 0;
  m.ffn_hidden_size = 4 * hidden;
  std::int64_t best = pp;
  double best_gap = 1e300;
  for (std::int64_t layers = pp; layers <= 400; layers += pp) {
    model_spec c = m;
    c.num_layers = layers;
    finalize_model(c);
    const double gap = std::fabs(static_cast<double>(count_parameters(c, 1).total) - label_params);
    if (gap < best_gap) {
      best_gap = gap;
      best = layers;
    }
  }
  return best;
}

std::int64_t to_i(const std::string& v, const std::string& where) { return detail::parse_integer(v, where); }

/// A size label in billions of parameters, "200B" or "200".
double billions(std::string v, const std::string& where) {
  if (!v.empty() && (v.back() == 'B' || v.back() == 'b')) v.pop_back();
  return detail::parse_number(v, where);
}

}  // namespace

namespace {

/// The measured time (or why there is none) of a row.
void read_measured(const row_map& r, const std::string& where, validation_row& v) {
  const std::string secs = field(r, "sec_per_iter");
  if (secs.empty()) {
    v.skipped = field(r, "mem_gb") == "OOM" ? "out of memory" : "no time measured";
    return;
  }
  v.measured_s = detail::parse_number(secs, where + " sec_per_iter");
  if (v.measured_s <= 0) throw input_error(where + " sec_per_iter must be positive, got " + secs);
  const std::string tf = field(r, "tflops");
  v.measured_tflops = tf.empty() ? 0 : detail::parse_number(tf, where + " tflops");
}

/// The job flags that reproduce a row under BLOOM's conditions (the CSV's notes): Megatron-DeepSpeed,
/// full recomputation, ALiBi, tied embeddings with an embedding norm, on Jean Zay's A100 nodes.
std::vector<std::string> job_args_of(const row_map& r, const std::string& where, const std::string& table,
                                     const std::string& date) {
  for (const char* need : {"hidden", "tp", "pp", "mbs", "gbs"}) {
    if (field(r, need).empty()) throw input_error(where + ": column '" + need + "' is empty or missing");
  }
  const std::int64_t hidden = to_i(field(r, "hidden"), where + " hidden");
  const std::int64_t pp = to_i(field(r, "pp"), where + " pp");
  // Heads: unstated in the 02-20 rows, which used the 02-17 200B config (96 heads).
  const std::int64_t heads = field(r, "heads").empty() ? 96 : to_i(field(r, "heads"), where + " heads");
  std::int64_t layers = 0;
  if (!field(r, "layers").empty()) {
    layers = to_i(field(r, "layers"), where + " layers");
  } else if (!field(r, "size_label").empty()) {
    layers = resolve_layers(pp, hidden, heads, billions(field(r, "size_label"), where + " size_label") * 1e9);
  } else {
    throw input_error(where + ": neither 'layers' nor 'size_label' given");
  }
  std::string gpus = field(r, "gpus");
  if (gpus.empty()) gpus = std::to_string(to_i(field(r, "dp"), where + " dp") * to_i(field(r, "tp"), where + " tp") * pp);
  const std::string vocab = field(r, "vocab").empty() ? "250880" : field(r, "vocab");
  const std::string seq = field(r, "seq").empty() ? "2048" : field(r, "seq");
  const std::string zero = field(r, "zero_stage").empty() ? "1" : field(r, "zero_stage");
  std::vector<std::string> args = {
      "--cluster", "jean-zay-a100", "--framework", "deepspeed", "--zero-stage", zero,
      "--num-layers", std::to_string(layers), "--hidden-size", std::to_string(hidden),
      "--ffn-hidden-size", std::to_string(4 * hidden), "--num-attention-heads", std::to_string(heads),
      "--seq-length", seq, "--max-position-embeddings", seq, "--vocab-size", vocab,
      "--position-embedding-type", "alibi", "--embed-layernorm", "--tp", field(r, "tp"), "--pp",
      field(r, "pp"), "--num-gpus", gpus, "--mbs", field(r, "mbs"), "--gbs", field(r, "gbs"),
      "--recompute-granularity", "full", field(r, "precision") == "bf16" ? "--bf16" : "--fp16"};
  // BLOOM's DeepSpeed (2022) reduced ZeRO-1's gradients rank by rank; the bucket all-reduce came later (§4.2.4).
  if (zero == "1" || zero == "2") args.insert(args.end(), {"--zero-grad-reduce", "reduce"});
  // Until 2022-02-28 bf16 ran on the fp16 ZeRO-1 optimizer (16-bit gradient accumulation); BLOOM's
  // BF16_Optimizer with fp32 accumulation arrived that day (the CSV's notes, §5.8).
  if (field(r, "precision") == "bf16" && !date.empty() && date < "2022-02-28") {
    args.insert(args.end(), {"--grad-accum-dtype", "bf16"});
  }
  // Production (bloom-final) and the 02-27/28 rows give each embedding its own pipeline slot.
  if (field(r, "notes").find("embedding partitioned as its own pipeline slot") != std::string::npos ||
      table.find("final") != std::string::npos) {
    args.push_back("--embedding-as-stage");
  }
  return args;
}

// ---- the published-measurements schema (../shared/reference/published-measurements.csv's columns) ----

/// Why a row cannot be expressed, naming the column; thrown inside published_args and caught per row.
struct unexpressible {
  std::string why;
};

std::string lower(std::string v) {
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return v;
}

std::string required(const row_map& r, const char* column) {
  const std::string v = field(r, column);
  if (v.empty()) throw unexpressible{std::string("column '") + column + "' is empty"};
  return v;
}

/// gpu_type ("H100-SXM 80GB", "A100 (DGX-A100, 2020)", "B200 (DGX-B200)") as a catalog cluster and GPU;
/// the first key found wins, so the superchips ("GB200", "GB300") come before the boards whose names
/// they contain.
std::vector<std::string> hardware_args(const row_map& r) {
  const std::string g = lower(required(r, "gpu_type"));
  struct known { const char* key; const char* cluster; const char* gpu; };
  static constexpr known kKnown[] = {{"h200", "dgx-h200", "h200-sxm-141gb"},
                                     {"h100 96gb hbm2e", "dgx-h100", "h100-sxm5-96gb-hbm2e"},
                                     {"h100", "dgx-h100", "h100-sxm5-80gb"},
                                     {"h800", "dgx-h100", "h100-sxm5-80gb"}, {"gb200", "gb200-nvl72", "gb200"},
                                     {"b200", "dgx-b200", "b200-sxm-180gb"}, {"gb300", "gb300-nvl72", "gb300"},
                                     {"b300", "dgx-b300", "b300-sxm-288gb"}, {"a100", "dgx-a100", "a100-sxm4-80gb"}};
  for (const known& k : kKnown) {
    if (g.find(k.key) == std::string::npos) continue;
    std::string gpu = k.gpu;
    if (std::string(k.key) == "a100" && g.find("40") != std::string::npos) gpu = "a100-sxm4-40gb";
    std::vector<std::string> a = {"--cluster", k.cluster, "--gpu", gpu, "--num-gpus", required(r, "num_gpus")};
    if (!field(r, "gpus_per_node").empty()) a.insert(a.end(), {"--gpus-per-node", field(r, "gpus_per_node")});
    return a;
  }
  throw unexpressible{"column 'gpu_type': '" + field(r, "gpu_type") + "' is not in the GPU catalog (`trainplan gpus`)"};
}

/// A row whose conditions name a catalog model (`catalog_model`: the MoE rows, whose FFN column reads
/// "dense / per expert" and whose routing, attention and layer mix the columns cannot say): that model at
/// the row's sequence, once the row's own shape columns agree with it.
std::vector<std::string> catalog_model_args(const row_map& r, const std::string& name) {
  const model_spec& m = [&]() -> const model_spec& {
    try {
      return find_model(name).spec;
    } catch (const input_error& e) {
      throw unexpressible{"column 'catalog_model': " + std::string(e.what())};
    }
  }();
  const std::pair<const char*, std::int64_t> kShape[] = {{"num_layers", m.num_layers},
                                                         {"hidden_size", m.hidden_size},
                                                         {"num_attention_heads", m.num_attention_heads},
                                                         {"num_query_groups", m.num_query_groups},
                                                         {"moe_experts", m.moe.num_experts},
                                                         {"moe_topk", m.moe.router_topk}};
  auto mismatch = [&](const std::string& column, const std::string& stated, const std::string& catalog) {
    return unexpressible{"column '" + column + "': " + stated + " is not catalog model " + name + "'s " + catalog};
  };
  for (const auto& [column, value] : kShape) {
    const std::string stated = field(r, column);
    // MLA has no query groups: the column says "MLA" (DeepSeek-V3's rows).
    if (std::string_view(column) == "num_query_groups" && lower(stated) == "mla") {
      if (!m.is_mla()) throw mismatch(column, stated, "GQA/MHA attention");
      continue;
    }
    if (!stated.empty() && stated != std::to_string(value)) throw mismatch(column, stated, std::to_string(value));
  }
  // The FFN column of an MoE row: "<dense> dense / <expert> per expert" or "<expert> per expert".
  if (const std::string ffn = field(r, "ffn_hidden_size"); !ffn.empty()) {
    std::int64_t dense = -1, expert = -1;
    char tail[16] = {};
    const bool both = std::sscanf(ffn.c_str(), "%" SCNd64 " dense / %" SCNd64 " per expert%15s", &dense, &expert, tail) == 2;
    const bool alone = !both && std::sscanf(ffn.c_str(), "%" SCNd64 " per expert%15s", &expert, tail) == 1;
    if (!both && !alone && ffn != std::to_string(m.ffn_hidden_size)) {
      throw mismatch("ffn_hidden_size", ffn, std::to_string(m.ffn_hidden_size));
    }
    if (both && dense != m.ffn_hidden_size) throw mismatch("ffn_hidden_size", ffn, std::to_string(m.ffn_hidden_size) + " dense");
    if ((both || alone) && expert != m.moe.expert_ffn_hidden_size) {
      throw mismatch("ffn_hidden_size", ffn, std::to_string(m.moe.expert_ffn_hidden_size) + " per expert");
    }
  }
  const std::string seq = required(r, "seq_length");
  return {"--model", name, "--seq-length", seq, "--max-position-embeddings", seq};
}

std::vector<std::string> published_model_args(const row_map& r) {
  if (const std::string name = field(r, "catalog_model"); !name.empty()) return catalog_model_args(r, name);
  const std::string act = lower(field(r, "activation"));
  const std::string seq = required(r, "seq_length");
  std::vector<std::string> a = {"--num-layers", required(r, "num_layers"), "--hidden-size", required(r, "hidden_size"),
                                "--num-attention-heads", required(r, "num_attention_heads"), "--vocab-size",
                                required(r, "vocab_size"), "--seq-length", seq, "--max-position-embeddings", seq};
  if (act == "swiglu") a.push_back("--swiglu");
  else if (act == "squared-relu" || act == "squared_relu" || act == "relu2") a.push_back("--squared-relu");
  else if (!act.empty() && act != "gelu") throw unexpressible{"column 'activation': '" + act + "' is not modelled"};
  if (lower(field(r, "tied_embeddings")) == "no") a.push_back("--untie-embeddings-and-output-weights");
  if (!field(r, "ffn_hidden_size").empty()) a.insert(a.end(), {"--ffn-hidden-size", field(r, "ffn_hidden_size")});
  else if (act == "swiglu") throw unexpressible{"column 'ffn_hidden_size' is empty (a SwiGLU model's FFN size)"};
  const std::string groups = field(r, "num_query_groups");
  if (!groups.empty() && groups != field(r, "num_attention_heads")) {
    a.insert(a.end(), {"--group-query-attention", "--num-query-groups", groups});
  }
  if (!field(r, "moe_experts").empty()) {
    a.insert(a.end(), {"--num-experts", field(r, "moe_experts"), "--moe-router-topk", required(r, "moe_topk")});
  }
  return a;
}

/// The optimizer-state sharding a published row names (its `zero_or_dist_opt`, lower case) as flags. A
/// value not in the table is refused by name: read silently as "none", DeepSpeed ZeRO-3 kept the whole
/// optimizer per GPU (2.8 TB for a 175B model) and the row's time took the allocator's penalty.
std::vector<std::string> sharding_args(const std::string& z) {
  struct sharding {
    const char* value;  ///< the column's text, or its start when it ends in '*'
    std::vector<std::string> flags;
  };
  static const sharding kShardings[] = {
      {"", {}},
      {"none", {}},
      {"none (megatron ptd-p)", {}},
      {"ddp*", {}},  // "DDP (FSDP=0); dist-opt not stated": Megatron DDP; the conditions say what the recipe adds
      {"distributed optimizer*", {"--use-distributed-optimizer"}},
      {"deepspeed zero-3", {"--framework", "deepspeed", "--zero-stage", "3"}},
      // torchtitan's FSDP2, resharded after forward (its default without PP).
      {"fsdp2 (zero-3-like)", {"--framework", "fsdp", "--zero-stage", "3"}},
      // torchao's enable_fsdp_float8_all_gather: FSDP2 all-gathers the FP8 weights (§5.1.3).
      {"fsdp2 + float8 all-gather", {"--framework", "fsdp", "--zero-stage", "3", "--fp8-param-gather"}},
      // BLOOM's prelaunch runs (2022): DeepSpeed before the bucket all-reduce (§4.2.4).
      {"zero-1 (deepspeed)", {"--framework", "deepspeed", "--zero-stage", "1", "--zero-grad-reduce", "reduce"}},
      {"zero-1 equivalent (deepspeed bf16_optimizer; zero-stage 0 in config)", {"--framework", "deepspeed", "--zero-stage", "0"}},
  };
  for (const sharding& k : kShardings) {
    const std::string_view v = k.value;
    const bool prefix = !v.empty() && v.back() == '*';
    if (prefix ? z.compare(0, v.size() - 1, v.substr(0, v.size() - 1)) == 0 : z == v) return k.flags;
  }
  throw unexpressible{"column 'zero_or_dist_opt': '" + z + "' is not modelled here (none, distributed optimizer, "
                      "DeepSpeed ZeRO-0/1/3)"};
}

std::vector<std::string> published_layout_args(const row_map& r) {
  std::vector<std::string> a = {"--tp", required(r, "tp"), "--pp", required(r, "pp"), "--mbs",
                                required(r, "micro_batch_size"), "--gbs", required(r, "global_batch_size")};
  for (const auto& [column, flag] : {std::pair{"cp", "--cp"}, {"ep", "--ep"}, {"vpp", "--vpp"}}) {
    std::string value = field(r, column);
    // A degree given with its words, as a source wrote it ("1 layer/virtual stage (VPP=8)"): the number
    // after "<COLUMN>=".
    std::string key = column;
    for (char& ch : key) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    if (const std::size_t at = value.find(key + "="); at != std::string::npos) {
      std::size_t end = at + key.size() + 1;
      while (end < value.size() && std::isdigit(static_cast<unsigned char>(value[end])) != 0) ++end;
      value = value.substr(at + key.size() + 1, end - at - key.size() - 1);
    }
    if (!value.empty() && value != "1") a.insert(a.end(), {flag, value});
  }
  const std::string sp = lower(field(r, "sequence_parallel"));
  if (sp == "yes" || sp == "true" || sp == "1" || sp == "on") a.push_back("--sequence-parallel");
  const std::string rc = lower(field(r, "activation_recompute"));
  if (rc.find("full") != std::string::npos) a.insert(a.end(), {"--recompute-granularity", "full"});
  // torchtitan's "selective (per-op SAC)" is its op-level policy (§3.4.4), not Megatron's attention core.
  else if (rc.find("per-op") != std::string::npos) a.insert(a.end(), {"--recompute-granularity", "op"});
  else if (rc.find("selective") != std::string::npos) a.insert(a.end(), {"--recompute-granularity", "selective"});
  else if (!rc.empty() && rc != "none" && rc != "no") throw unexpressible{"column 'activation_recompute': '" + rc + "' is not none, selective or full"};
  const std::vector<std::string> sharding = sharding_args(lower(field(r, "zero_or_dist_opt")));
  a.insert(a.end(), sharding.begin(), sharding.end());
  // Columns of our own, optional: the framework and attention kernel when not today's Megatron-Core.
  if (!field(r, "framework").empty()) a.insert(a.end(), {"--framework", lower(field(r, "framework"))});
  if (!field(r, "attention_backend").empty()) a.insert(a.end(), {"--attention-backend", lower(field(r, "attention_backend"))});
  if (!field(r, "zero_stage").empty()) a.insert(a.end(), {"--zero-stage", field(r, "zero_stage")});
  const std::string prec = lower(required(r, "precision"));
  // FP8 through Transformer Engine as NeMo and Megatron-Core run it: bf16 weights, --fp8-format hybrid.
  if (prec.find("fp8") != std::string::npos) a.insert(a.end(), {"--bf16", "--fp8-format", "hybrid"});
  else if (prec.find("bf16") != std::string::npos) a.push_back("--bf16");
  else if (prec.find("fp16") != std::string::npos) a.push_back("--fp16");
  else throw unexpressible{"column 'precision': '" + prec + "' is not bf16 or fp16"};
  return a;
}

/// The GPU generation and precision a published row belongs to, for the per-generation statistics
/// (issue 9's targets are per generation): "A100", "H100 BF16", "H100 FP8", "B200 FP8".
std::string generation_of(const std::string& gpu_type, const std::string& precision) {
  const std::string g = lower(gpu_type), p = lower(precision);
  for (const char* family : {"a100", "h100", "h200", "b200", "b300", "v100"}) {
    if (g.find(family) == std::string::npos) continue;
    std::string name(family);
    for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return name + (p.find("fp8") != std::string::npos ? " FP8" : p.find("bf16") != std::string::npos ? " BF16" : " FP16");
  }
  return "";
}

/// Which peak memory a published row measured (its `mem_unit_metric`), and in what unit (§3.10). Read
/// by the first entry whose every phrase the text contains (lower case).
enum class memory_statistic : std::uint8_t { allocated_last_rank, torch_reserved_busiest };
struct memory_metric_row {
  std::array<std::string_view, 2> phrases;
  memory_statistic what;
  std::string_view name;  ///< as the report names it
  double unit_bytes;
};
constexpr memory_metric_row kMemoryMetrics[] = {
    // Megatron-LM's functional-test goldens: "GB (1e9 B) torch allocated_bytes.all.peak
    // (=max_memory_allocated), logged on LAST rank", "GB torch max_memory_allocated on last rank".
    {{"max_memory_allocated", "last rank"}, memory_statistic::allocated_last_rank, "allocated, last rank", 1e9},
    // torchtitan's 'memory:' log line: "GiB, torch max_memory_reserved …, max over GPUs".
    {{"max_memory_reserved", "max over gpus"}, memory_statistic::torch_reserved_busiest,
     "reserved by PyTorch, busiest rank", 1073741824.0},
};

/// The row's measured peak memory, if it gives one trainplan compares: its statistic and bytes. BLOOM's
/// nvidia-smi readings of one node are compared by tests/core/estimate/memory_validation_test.cc.
void read_memory_measurement(const row_map& r, const std::string& where, validation_row& v) {
  const std::string value = field(r, "peak_mem_per_gpu");
  if (value.empty()) return;
  const std::string metric = lower(field(r, "mem_unit_metric"));
  for (const memory_metric_row& m : kMemoryMetrics) {
    if (metric.find(m.phrases[0]) == std::string::npos || metric.find(m.phrases[1]) == std::string::npos) continue;
    const double amount = detail::parse_number(value, where + " peak_mem_per_gpu");
    if (!(amount > 0)) throw input_error(where + " peak_mem_per_gpu must be positive");
    v.measured_memory_bytes = amount * m.unit_bytes;
    v.memory_metric = std::string(m.name);
    return;
  }
}

/// The predicted value of a row's memory statistic.
double predicted_memory(const validation_row& v, const memory_report& m) {
  for (const memory_metric_row& row : kMemoryMetrics) {
    if (v.memory_metric != row.name) continue;
    if (row.what == memory_statistic::allocated_last_rank) return m.stages.back().allocated_bytes;
    double most = 0;
    for (const stage_memory& s : m.stages) most = std::max(most, s.torch_reserved_bytes);
    return most;
  }
  return 0;
}

/// A column that holds a whole number and nothing else, or -1.
std::int64_t whole_number(const row_map& r, const char* column) {
  const std::string v = field(r, column);
  std::int64_t n = -1;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  return ec == std::errc() && end == v.data() + v.size() && n > 0 ? n : -1;
}

/// A row whose stated degrees, TP × PP × CP × DP, multiply to another GPU count than its num_gpus
/// contradicts itself. The degrees are the layout the figure was measured on, so they give the GPUs, and
/// `assumed` says so: NeMo's B200 long-sequence table (performance_long_sequence.md, NeMo 25.04) listed
/// each sequence length in thousands as its GPU count (8 GPUs at 8K with TP 1, CP 1, DP 2), which its
/// later revision corrects to the degrees' product (2).
void reconcile_gpu_count(row_map& r, std::string& assumed) {
  const std::int64_t tp = whole_number(r, "tp"), pp = whole_number(r, "pp"), dp = whole_number(r, "dp");
  const std::int64_t cp = field(r, "cp").empty() ? 1 : whole_number(r, "cp");
  const std::int64_t gpus = whole_number(r, "num_gpus");
  // A degree past the parallel limit is left to the job's own rule, which names it (and the product of
  // four such could overflow).
  for (const std::int64_t d : {tp, pp, dp, cp}) {
    if (d < 0 || d > limits::kMaxParallel) return;
  }
  if (gpus < 0 || tp * pp * cp * dp == gpus) return;
  const std::int64_t product = tp * pp * cp * dp;
  if (!assumed.empty()) assumed += "; ";
  assumed += fmt::format("num_gpus {} contradicts the row's own TP {} × PP {} × CP {} × DP {} = {}: planned on {}, the "
                         "layout the figure was measured on",
                         gpus, tp, pp, cp, dp, product, product);
  r["num_gpus"] = std::to_string(product);
}

/// A row of the published schema: Megatron-Core (the framework the tables measured) at the row's model,
/// GPU, layout and precision; measured time, or model TFLOPs when the source gives no time.
validation_row published_row(row_map r, const std::string& table, int line_no) {
  const std::string where = table + ":" + std::to_string(line_no);
  // Columns of our own (tests/data/published-conditions.csv for the shipped table): `fills` sets columns
  // the source leaves empty ("micro_batch_size=1;..."), `extra_flags` adds the flags the source names
  // in its text, `assumed` says which of these are assumptions.
  const std::string fills_text = field(r, "fills");
  for (std::string_view fills = fills_text; !fills.empty();) {
    const std::size_t end = std::min(fills.find(';'), fills.size());
    const std::string_view item = fills.substr(0, end);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) throw input_error(where + " fills: '" + std::string(item) + "' is not column=value");
    const std::string column(item.substr(0, eq));
    if (field(r, column).empty()) r[column] = std::string(item.substr(eq + 1));
    fills = end < fills.size() ? fills.substr(end + 1) : std::string_view{};
  }
  validation_row v;
  v.assumed = field(r, "assumed");
  reconcile_gpu_count(r, v.assumed);
  v.table = table;
  v.label = field(r, "row").empty() ? "line " + std::to_string(line_no) : field(r, "row");
  v.source = field(r, "source");
  v.date = field(r, "model");
  read_memory_measurement(r, where, v);
  try {
    // The conditions say what of the run trainplan cannot plan (torch.compile's kernels): the first reason,
    // before any column the row leaves empty.
    if (!field(r, "not_modelled").empty()) throw unexpressible{field(r, "not_modelled")};
    if (!field(r, "iteration_time_s").empty()) {
      v.measured_s = detail::parse_number(field(r, "iteration_time_s"), where + " iteration_time_s");
      if (v.measured_s <= 0) throw input_error(where + " iteration_time_s must be positive");
    } else if (!field(r, "tokens_per_s_per_gpu").empty() &&
               (field(r, "tflops_per_gpu").empty() || (!field(r, "global_batch_size").empty() &&
                                                       !field(r, "seq_length").empty() && !field(r, "num_gpus").empty()))) {
      // Throughput (tokens/s/GPU) is what was measured; a TFLOPs figure beside it is that throughput times
      // the source's own FLOPs formula (NeMo 24.07 counts the full s² attention, Megatron-Bridge counts
      // GPT-OSS's windows and widths its own way: 3-20% apart from trainplan's count), so the throughput is
      // compared, as a time: an iteration is GBS × sequence tokens over all GPUs (docs/validation.md).
      const double tps = detail::parse_number(field(r, "tokens_per_s_per_gpu"), where + " tokens_per_s_per_gpu");
      if (tps <= 0) throw input_error(where + " tokens_per_s_per_gpu must be positive");
      const double gbs = detail::parse_number(required(r, "global_batch_size"), where + " global_batch_size");
      const double seq = detail::parse_number(required(r, "seq_length"), where + " seq_length");
      const double gpus = detail::parse_number(required(r, "num_gpus"), where + " num_gpus");
      if (!(gbs > 0 && seq > 0 && gpus > 0)) throw input_error(where + " global_batch_size, seq_length and num_gpus must be positive");
      v.measured_s = gbs * seq / (tps * gpus);
    } else if (!field(r, "tflops_per_gpu").empty()) {
      v.by_tflops = true;
      // Narayanan et al.'s eq. 3 counts the recomputed forward (hardware FLOPs); NeMo and Megatron-Core
      // report model FLOPs.
      const std::string convention = lower(field(r, "flops_convention"));
      v.hardware_tflops = convention.find("eq.3") != std::string::npos || convention.find("eq. 3") != std::string::npos;
      v.measured_tflops = detail::parse_number(field(r, "tflops_per_gpu"), where + " tflops_per_gpu");
      if (v.measured_tflops <= 0) throw input_error(where + " tflops_per_gpu must be positive");
    } else if (!(v.measured_memory_bytes > 0)) {
      throw unexpressible{"columns 'iteration_time_s', 'tflops_per_gpu' and 'tokens_per_s_per_gpu' are all empty"};
    } else {
      // A peak memory without a time (Megatron's A100 goldens): the memory is compared, the time not.
      v.skipped = "columns 'iteration_time_s', 'tflops_per_gpu' and 'tokens_per_s_per_gpu' are all empty";
    }
    v.args = hardware_args(r);
    for (auto&& part : {published_model_args(r), published_layout_args(r)}) v.args.insert(v.args.end(), part.begin(), part.end());
    std::istringstream extra(field(r, "extra_flags"));
    for (std::string flag; extra >> flag;) v.args.push_back(flag);
    v.group = generation_of(field(r, "gpu_type"), field(r, "precision"));
    const std::string catalog = field(r, "catalog_model");  // a known model by now (catalog_model_args)
    if (!v.group.empty() && (!field(r, "moe_experts").empty() || (!catalog.empty() && find_model(catalog).spec.is_moe()))) {
      v.group += " MoE";  // validated apart, as generation_of_job bands them
    }
  } catch (const unexpressible& u) {
    v.skipped = u.why;
    v.args.clear();
  }
  if (v.measured_memory_bytes > 0 && v.args.empty()) v.memory_skipped = v.skipped;
  return v;
}

/// §5.8: the model FLOPs per iteration a source adds by counting the whole s² square of causal attention,
/// which every formula of the given tables' TFLOPs-only rows does (Narayanan et al. eq. 3, Megatron-Core
/// r0.8.0's num_floating_point_operations "+ seq_length / hidden_size", NeMo's flops_formulas "12·s/hs",
/// PaLM's MFU): trainplan counts the causal half a flash kernel executes (the unfused core's GEMMs count the
/// square already). Per attention layer and sequence: b·heads·s²·(d_qk + d_v), three times (forward and
/// backward). Windowed layers are left as counted (no TFLOPs-only row has them).
double full_square_extra_model_flops(const job_spec& job) {
  if (!job.training.flash_attention) return 0;
  const model_spec& m = job.model;
  const layer_counts kinds = m.count_layer_kinds(0, m.num_layers);
  double layers = 0;
  for (std::size_t k = 0; k < kNumLayerKinds; ++k) {
    const layer_makeup& mk = makeup_of(static_cast<layer_kind>(k));
    if (mk.attention && !mk.window) layers += static_cast<double>(kinds[k]);
  }
  const double s = static_cast<double>(m.seq_length);
  const double dv = static_cast<double>(m.attention_out_width() / m.num_attention_heads);
  return 3.0 * static_cast<double>(job.training.global_batch_size) * layers * static_cast<double>(m.num_attention_heads) *
         s * s * (static_cast<double>(m.kv_channels) + dv);
}

/// Published-measurements columns (model, GPU, layout, precision per row) rather than BLOOM's.
bool published_schema(const std::vector<std::string>& header) {
  auto has = [&](const char* c) { return std::find(header.begin(), header.end(), c) != header.end(); };
  return has("num_layers") && has("hidden_size") && has("gpu_type");
}

/// One CSV row (after the prequel's corrections) as a validation row.
validation_row row_of(const row_map& r, const std::string& table, int line_no) {
  const std::string where = table + ":" + std::to_string(line_no);
  validation_row v;
  v.table = table;
  v.date = field(r, "date");
  v.label = !field(r, "source_line").empty() ? field(r, "source_line") : "line " + std::to_string(line_no);
  read_measured(r, where, v);
  v.args = job_args_of(r, where, table, v.date);
  for (const environment_note& e : kEnvironmentNotes) {
    if (!v.date.empty() && v.date < e.before_date) v.environment_factor *= e.slowdown;
  }
  if (!field(r, "source_line").empty()) {
    const int src = static_cast<int>(to_i(field(r, "source_line"), where + " source_line"));
    for (const seed_group& g : seed_groups()) {
      if (std::find(g.lines.begin(), g.lines.end(), src) != g.lines.end()) {
        v.group = g.name;
        break;
      }
    }
  }
  return v;
}

/// Calls f(header, row, line_no) for every non-empty line after the header, the row as column → value;
/// returns the header (empty for an empty text).
template <typename F>
std::vector<std::string> for_each_csv_row(const std::string& text, F&& f) {
  std::istringstream in(text);
  std::vector<std::string> header;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty() || line == "\r") continue;
    const std::vector<std::string> fields = split_csv_line(line);
    if (header.empty()) {
      header = fields;
      continue;
    }
    row_map r;
    for (std::size_t i = 0; i < header.size(); ++i) r[header[i]] = i < fields.size() ? fields[i] : "";
    f(header, r, line_no);
  }
  return header;
}

/// The shipped published table's conditions (tests/data/published-conditions.csv), by row.
const std::map<std::string, row_map>& published_conditions() {
  static const std::map<std::string, row_map> conditions = [] {
    std::map<std::string, row_map> by_row;
    for_each_csv_row(embedded::kPublishedConditionsCsv,
                     [&](const std::vector<std::string>&, row_map& r, int) { by_row[field(r, "row")] = std::move(r); });
    return by_row;
  }();
  return conditions;
}

/// read_measurements, with per-row conditions merged into published-schema rows by their `row`.
std::vector<validation_row> read_rows(const std::string& csv_text, const std::string& table,
                                      const std::map<std::string, row_map>* conditions) {
  detail::require_utf8(csv_text, table);
  std::vector<validation_row> out;
  const std::vector<std::string> header =
      for_each_csv_row(csv_text, [&](const std::vector<std::string>& columns, row_map& r, int line_no) {
        if (published_schema(columns)) {
          if (conditions != nullptr) {
            if (const auto it = conditions->find(field(r, "row")); it != conditions->end()) {
              for (const auto& [column, value] : it->second) {
                if (column != "row") r[column] = value;
              }
            }
          }
          out.push_back(published_row(r, table, line_no));
          return;
        }
        if (table.find("prequel") != std::string::npos && !field(r, "source_line").empty()) {
          for (const row_correction& c : kCorrections) {
            if (field(r, "source_line") == std::to_string(c.source_line)) r[c.column] = c.value;
          }
        }
        out.push_back(row_of(r, table, line_no));
      });
  if (out.empty()) {
    throw input_error(table + (header.empty() ? ": empty file: expected a header line and measurement rows"
                                              : ": a header line but no measurement rows"));
  }
  return out;
}

/// The statistics of `rows` grouped by `key` (a row whose key is "" is in no group), groups in the
/// order their first row appears.
template <typename Key, typename Stats = decltype(&stats_of)>
std::vector<validation_stats> stats_by(const std::vector<const validation_row*>& rows, Key key, Stats stats = &stats_of) {
  std::vector<std::string> names;
  std::vector<std::vector<const validation_row*>> members;
  for (const validation_row* v : rows) {
    const std::string name = key(*v);
    if (name.empty()) continue;
    const auto at = std::find(names.begin(), names.end(), name);
    if (at == names.end()) {
      names.push_back(name);
      members.push_back({v});
    } else {
      members[static_cast<std::size_t>(at - names.begin())].push_back(v);
    }
  }
  std::vector<validation_stats> out;
  for (std::size_t i = 0; i < names.size(); ++i) out.push_back(stats(names[i], members[i]));
  return out;
}

}  // namespace

std::vector<validation_row> read_measurements(const std::string& csv_text, const std::string& table) {
  return read_rows(csv_text, table, nullptr);
}

namespace {

/// A row's predicted time, TFLOPs and throughput from the time report of its job (§5.8).
void predict_time(const job_spec& job, const time_report& t, validation_row& v) {
  v.predicted_s = t.iteration_s * v.environment_factor;
  v.fits = t.fits;
  v.peak_reserved_bytes = t.peak_reserved_bytes;
  v.capacity_bytes = t.capacity_bytes;
  v.generation = generation_of_job(job);
  v.framework = std::string(to_string(job.training.framework));
  // Throughput, what a layout table ranks (§5.8): model FLOPs per second per GPU.
  v.predicted_model_flops_per_gpu_s = t.model_tflops_per_gpu * 1e12 / v.environment_factor;
  if (v.by_tflops) {
    // The prediction's TFLOPs by the source's count (§5.8): its FLOPs over the predicted time, the
    // square's extra scaled like the rest where the source counts the recomputed forward too.
    const double ours = v.hardware_tflops ? t.tflops_per_gpu : t.model_tflops_per_gpu;
    const double recomputed = v.hardware_tflops ? t.tflops_per_gpu / t.model_tflops_per_gpu : 1.0;
    const double extra = full_square_extra_model_flops(job) * recomputed /
                         (t.iteration_s * static_cast<double>(job.num_gpus) * 1e12);
    v.predicted_tflops = (ours + extra) / v.environment_factor;
    v.error = v.measured_tflops / v.predicted_tflops - 1;
    v.measured_model_flops_per_gpu_s = v.predicted_model_flops_per_gpu_s * v.measured_tflops / v.predicted_tflops;
  } else {
    v.predicted_tflops = t.tflops_per_gpu / v.environment_factor;
    v.error = v.predicted_s / v.measured_s - 1;
    v.measured_model_flops_per_gpu_s = v.predicted_model_flops_per_gpu_s * v.predicted_s / v.measured_s;
  }
}

}  // namespace

validation_report run_validation(std::vector<validation_row> rows) {
  validation_report rep;
  for (validation_row& v : rows) {
    // A row is planned for its time, and for its memory where it measured one (§3.10).
    const bool memory = v.measured_memory_bytes > 0 && v.memory_skipped.empty();
    if (!v.skipped.empty() && !memory) continue;
    try {
      const parsed_job pj = parse_job_args(v.args);
      const layout_evaluation ev = evaluate_layout(pj.job);
      if (memory) {
        v.predicted_memory_bytes = predicted_memory(v, ev.memory);
        v.memory_error = v.predicted_memory_bytes / v.measured_memory_bytes - 1;
      }
      if (!v.skipped.empty()) continue;
      predict_time(pj.job, ev.time, v);
    } catch (const input_error& e) {
      if (v.skipped.empty()) v.skipped = e.what();
      if (memory) v.memory_skipped = e.what();
    }
  }
  rep.rows = std::move(rows);
  std::vector<const validation_row*> all;
  for (const validation_row& v : rep.rows) all.push_back(&v);
  rep.tables = stats_by(all, [](const validation_row& v) { return v.table; });
  // A row may sit in several seed tables (the seed repeats rows); membership is by source line.
  for (const seed_group& g : seed_groups()) {
    std::vector<const validation_row*> sel;
    for (const validation_row* v : all) {
      if (v->table.find("prequel") == std::string::npos) continue;
      for (const int line : g.lines) {
        if (v->label == std::to_string(line)) sel.push_back(v);  // labels without a source line never match
      }
    }
    if (!sel.empty()) rep.groups.push_back(stats_of(g.name, sel));
  }
  // Published rows by GPU generation and precision (issue 9's targets are per generation); the rows of
  // the second published table, which nothing was fitted on, apart.
  rep.generations = stats_by(all, [](const validation_row& v) {
    if (v.table.find("prequel") != std::string::npos || v.group.empty()) return std::string();
    return v.table == kPublishedMoreTable ? v.group + ", held out" : v.group;
  });
  rep.sources = stats_by(all, [](const validation_row& v) { return v.source; });
  rep.memory_sources = stats_by(
      all,
      [](const validation_row& v) {
        return v.measured_memory_bytes > 0 ? v.source + " (" + v.memory_metric + ")" : std::string();
      },
      &memory_stats_of);
  rep.overall = stats_of("overall", all);
  return rep;
}

namespace {

/// A BLOOM row's source for leave-one-source-out: its measurement day in the prequel table, or the
/// production log lines of the final table (one run).
std::string bloom_source_of(const validation_row& v) {
  if (v.table.find("bloom-final") != std::string::npos) return "production log lines";
  if (v.table.find("bloom-prequel") != std::string::npos) return v.date;
  return "";
}

}  // namespace

namespace {

/// §5.6: a default fitted on one published source. With that source left out nothing constrains it, so
/// it falls back to its prior: the source's rows predicted at the prior, beside their in-sample errors.
published_fold published_source_left_out(validation_report& r, const published_fit& fit) {
  published_fold f;
  f.constant = fit.constant;
  f.source = fit.source;
  f.shipped_value = fit.value;
  f.refit_value = fit.prior;
  std::vector<double> held, in_sample;
  for (validation_row& v : r.rows) {
    if (v.source != fit.source || !v.skipped.empty()) continue;
    job_spec job = parse_job_args(v.args).job;
    fit.set(job.cluster.gpu, fit.prior);
    validation_row refit = v;
    predict_time(job, evaluate_layout(job).time, refit);
    v.held_out_abs_error = std::fabs(refit.error);
    held.push_back(v.held_out_abs_error);
    in_sample.push_back(std::fabs(v.error));
  }
  f.rows = static_cast<std::int64_t>(held.size());
  if (held.empty()) return f;
  f.median_abs_error = median_of(held);
  f.max_abs_error = *std::max_element(held.begin(), held.end());
  f.shipped_median_abs_error = median_of(in_sample);
  f.shipped_max_abs_error = *std::max_element(in_sample.begin(), in_sample.end());
  return f;
}

}  // namespace

void leave_one_source_out(validation_report& r) {
  struct bloom_case {
    job_spec job;
    double measured_s = 0, environment_factor = 1;
    std::string source;
    std::size_t row = 0;  ///< index in r.rows
  };
  std::vector<bloom_case> cases;
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const validation_row& v = r.rows[i];
    const std::string source = bloom_source_of(v);
    if (source.empty() || !v.skipped.empty() || v.by_tflops) continue;
    cases.push_back({parse_job_args(v.args).job, v.measured_s, v.environment_factor, source, i});
  }
  loso_report& out = r.loso;
  out = loso_report{};
  out.published.push_back(published_source_left_out(r, blackwell_attention_fit()));
  if (cases.empty()) return;
  // The shipped constants (compute_defaults.cc, framework.cc) and the grid around them.
  const compute_efficiency shipped = effective_compute_efficiency(cases.front().job.cluster.gpu);
  const double shipped_tile = shipped.tiles.front().peak_fraction;
  out.shipped_tile_fraction = shipped_tile;
  out.shipped_host_ms = 1e3 * host_overhead_per_layer_pass_s(cases.front().job.training);
  out.tile_first = 0.65, out.tile_step = 0.01, out.tile_count = 31;     // 0.65 … 0.95
  out.host_first_ms = 0.0, out.host_step_ms = 0.1, out.host_count = 41;  // 0 … 4.0 ms
  const std::size_t points = static_cast<std::size_t>(out.tile_count * out.host_count);
  // |error| of every case at every grid point: the tiles scaled to the point's large-GEMM fraction, the
  // host time set (--host-overhead-ms), nothing else changed.
  std::vector<double> error(points * cases.size());
  for (std::size_t c = 0; c < cases.size(); ++c) {
    job_spec job = cases[c].job;
    const compute_efficiency base = effective_compute_efficiency(job.cluster.gpu);
    for (std::int64_t i = 0; i < out.tile_count; ++i) {
      const double tile = out.tile_first + out.tile_step * static_cast<double>(i);
      job.cluster.gpu.compute.tiles = base.tiles;
      for (gemm_tile& t : job.cluster.gpu.compute.tiles) t.peak_fraction *= tile / shipped_tile;
      for (std::int64_t k = 0; k < out.host_count; ++k) {
        job.training.host_overhead_per_layer_pass_s = 1e-3 * (out.host_first_ms + out.host_step_ms * static_cast<double>(k));
        const double predicted = estimate_time(job).iteration_s * cases[c].environment_factor;
        error[static_cast<std::size_t>(i * out.host_count + k) * cases.size() + c] =
            std::fabs(predicted / cases[c].measured_s - 1);
      }
    }
  }
  std::vector<std::string> sources;
  for (const bloom_case& c : cases)
    if (std::find(sources.begin(), sources.end(), c.source) == sources.end()) sources.push_back(c.source);
  std::vector<double> all_out, all_shipped;
  for (const std::string& held : sources) {
    // The grid point of least median |error| over the other sources (ties: the first, smallest tile).
    std::size_t best = 0;
    double best_median = 1e300;
    std::vector<double> train;
    for (std::size_t g = 0; g < points; ++g) {
      train.clear();
      for (std::size_t c = 0; c < cases.size(); ++c)
        if (cases[c].source != held) train.push_back(error[g * cases.size() + c]);
      const double med = median_of(train);
      if (med < best_median) {
        best_median = med;
        best = g;
      }
    }
    loso_fold f;
    f.source = held;
    f.tile_fraction = out.tile_first + out.tile_step * static_cast<double>(best / static_cast<std::size_t>(out.host_count));
    f.host_ms = out.host_first_ms + out.host_step_ms * static_cast<double>(best % static_cast<std::size_t>(out.host_count));
    std::vector<double> held_out, held_shipped;
    for (std::size_t c = 0; c < cases.size(); ++c) {
      if (cases[c].source != held) continue;
      held_out.push_back(error[best * cases.size() + c]);
      r.rows[cases[c].row].held_out_abs_error = held_out.back();
      // The shipped constants: the row's own prediction (run_validation's).
      job_spec job = cases[c].job;
      held_shipped.push_back(std::fabs(estimate_time(job).iteration_s * cases[c].environment_factor / cases[c].measured_s - 1));
    }
    f.rows = static_cast<std::int64_t>(held_out.size());
    f.median_abs_error = median_of(held_out);
    f.shipped_median_abs_error = median_of(held_shipped);
    all_out.insert(all_out.end(), held_out.begin(), held_out.end());
    all_shipped.insert(all_shipped.end(), held_shipped.begin(), held_shipped.end());
    out.folds.push_back(f);
  }
  out.median_abs_error = median_of(all_out);
  out.shipped_median_abs_error = median_of(all_shipped);
}

const validation_report& shipped_validation() {
  static const validation_report shipped = validate_shipped();
  return shipped;
}

/// Where the build linked no precomputed table (src/cli/shipped_errors.h): none. The generated source's
/// strong definition replaces this one in the executables that link it.
__attribute__((weak)) const detail::shipped_error* detail::precomputed_shipped_errors(std::size_t& count) {
  count = 0;
  return nullptr;
}

namespace {

/// What expected_error reads of the shipped validation: the precomputed rows where linked, else the
/// validation itself with its leave-one-source-out errors (computed once).
const validation_report& shipped_errors() {
  static const validation_report table = [] {
    std::size_t n = 0;
    const detail::shipped_error* rows = detail::precomputed_shipped_errors(n);
    validation_report r;
    for (std::size_t i = 0; i < n; ++i) {
      validation_row v;
      v.generation = rows[i].generation;
      v.framework = rows[i].framework;
      v.error = rows[i].error;
      v.held_out_abs_error = rows[i].held_out_abs_error;
      r.rows.push_back(std::move(v));
    }
    return r;
  }();
  if (!table.rows.empty()) return table;
  static const validation_report computed = [] {
    validation_report r = shipped_validation();
    leave_one_source_out(r);
    return r;
  }();
  return computed;
}

}  // namespace

error_band expected_error_of(const job_spec& job) {
  return expected_error(shipped_errors(), generation_of_job(job), std::string(to_string(job.training.framework)));
}

validation_report validate_shipped() {
  std::vector<validation_row> rows = read_measurements(embedded::kBloomPrequelCsv, "bloom-prequel-measurements.csv");
  std::vector<validation_row> fin = read_measurements(embedded::kBloomFinalCsv, "bloom-final-measurements.csv");
  rows.insert(rows.end(), fin.begin(), fin.end());
  std::vector<validation_row> published =
      read_rows(embedded::kPublishedCsv, "published-measurements.csv", &published_conditions());
  rows.insert(rows.end(), published.begin(), published.end());
  std::vector<validation_row> more = read_rows(embedded::kPublishedMoreCsv, kPublishedMoreTable, &published_conditions());
  rows.insert(rows.end(), more.begin(), more.end());
  return run_validation(std::move(rows));
}

}  // namespace trainplan
