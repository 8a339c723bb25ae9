#include "test_support.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "cli/csv.h"
#include "trainplan/core/model/model.h"

namespace trainplan::testing {

std::string data_path(const std::string& name) { return std::string(TRAINPLAN_TEST_DATA_DIR) + "/" + name; }

using detail::split_csv_line;

std::vector<csv_row> read_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = split_csv_line(line);
  std::vector<csv_row> rows;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const std::vector<std::string> f = split_csv_line(line);
    csv_row row;
    for (std::size_t i = 0; i < header.size(); ++i) row[header[i]] = i < f.size() ? f[i] : "";
    rows.push_back(row);
  }
  return rows;
}

std::int64_t bloom_row_layers(const csv_row& row) {
  if (!row.at("layers").empty()) return std::stoll(row.at("layers"));
  const std::int64_t pp = std::stoll(row.at("pp"));
  const std::int64_t hidden = std::stoll(row.at("hidden"));
  const double label = std::stod(row.at("size_label")) * 1e9;  // "200B"
  model_spec m = find_model("bloom-176b").spec;
  m.hidden_size = hidden;
  m.kv_channels = 0;
  m.num_attention_heads = 96;
  m.num_query_groups = 0;
  std::int64_t best = pp;
  double best_gap = 1e300;
  for (std::int64_t layers = pp; layers <= 200; layers += pp) {
    model_spec c = m;
    c.num_layers = layers;
    c.ffn_hidden_size = 4 * hidden;
    finalize_model(c);
    const double gap = std::fabs(static_cast<double>(count_parameters(c, 1).total) - label);
    if (gap < best_gap) {
      best_gap = gap;
      best = layers;
    }
  }
  return best;
}

std::int64_t bloom_row_heads(const csv_row& row) {
  return row.at("heads").empty() ? 96 : std::stoll(row.at("heads"));
}

std::vector<std::string> bloom_row_args(const csv_row& row) {
  const std::string hidden = row.at("hidden");
  std::vector<std::string> a = {
      "--cluster", "jean-zay-a100", "--framework", "deepspeed", "--zero-stage", row.at("zero_stage"),
      "--num-layers", std::to_string(bloom_row_layers(row)), "--hidden-size", hidden,
      "--ffn-hidden-size", std::to_string(4 * std::stoll(hidden)),
      "--num-attention-heads", std::to_string(bloom_row_heads(row)), "--seq-length", "2048",
      "--max-position-embeddings", "2048", "--vocab-size", "250880", "--position-embedding-type", "alibi",
      "--embed-layernorm", "--tp", row.at("tp"), "--pp", row.at("pp"), "--num-gpus", row.at("gpus"),
      "--mbs", row.at("mbs"), "--gbs", row.at("gbs"), "--recompute-granularity", "full",
      row.at("precision") == "bf16" ? "--bf16" : "--fp16"};
  // BLOOM's DeepSpeed (2022) reduced ZeRO-1's gradients rank by rank (docs/formulas.md §4.2.4).
  if (row.at("zero_stage") == "1" || row.at("zero_stage") == "2") a.insert(a.end(), {"--zero-grad-reduce", "reduce"});
  // Until 2022-02-28 bf16 ran on the same ZeRO-1 optimizer as fp16 (16-bit gradient accumulation);
  // BLOOM's BF16_Optimizer with fp32 accumulation arrived that day (the CSV's notes).
  if (row.at("precision") == "bf16" && row.at("date") < "2022-02-28") {
    a.push_back("--grad-accum-dtype");
    a.push_back("bf16");
  }
  if (row.at("notes").find("embedding partitioned as its own pipeline slot") != std::string::npos) {
    a.push_back("--embedding-as-stage");
  }
  return a;
}

std::vector<std::string> bloom_production_args() {
  return {"--model", "bloom-176b", "--cluster", "jean-zay-a100", "--num-nodes", "48", "--tp", "4", "--pp", "12",
          "--mbs", "2", "--gbs", "2048", "--bf16", "--framework", "deepspeed", "--zero-stage", "1",
          "--recompute-granularity", "full", "--embedding-as-stage"};
}

}  // namespace trainplan::testing
