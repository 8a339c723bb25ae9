// The job-flag table: every flag trainplan accepts, its aliases, default, help and what it sets
// (docs/formulas.md §2.1 lists the mapping). Data, one row per flag; src/cli/args.cc parses against it.
#include <limits>
#include <string>
#include <vector>

#include "args_detail.h"
#include "parse.h"
#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/job/layout_string.h"

namespace trainplan::args_detail {

namespace {

using detail::parse_enum;

/// The job field an assignment to `b.job.<section>.<field>` sets ("parallel.tp"); "" for the builder's own.
std::string field_of(std::string_view assignment) {
  constexpr std::string_view kJob = "b.job.";
  if (!assignment.starts_with(kJob)) return {};
  assignment.remove_prefix(kJob.size());
  return std::string(assignment.substr(0, assignment.find_first_of(" =")));
}

/// `s` with the fields it sets named (a handler that assigns the builder's own members).
setter with_fields(setter s, std::string fields) {
  s.fields = std::move(fields);
  return s;
}

#define INT_FIELD(path) \
  setter([](job_builder& b, const std::string& v, const std::string& f) { path = to_int(v, f); }, field_of(#path))
#define INT_FIELD_MIN(path, lo)                                                                                      \
  setter([](job_builder& b, const std::string& v, const std::string& f) { path = to_int_min(v, f, lo); }, \
         field_of(#path))
#define MODEL_INT(field) MODEL_INT_MIN(field, 1)
#define MODEL_INT_MIN(field, lo)                                          \
  setter(                                                                 \
      [](job_builder& b, const std::string& v, const std::string& f) {    \
        b.job.model.field = to_int_min(v, f, lo);                         \
        b.model_fields = true;                                            \
        b.explicit_fields.push_back(#field);                              \
      },                                                                  \
      "model." #field)
#define MODEL_SWITCH(stmt)                                                 \
  setter(                                                                  \
      [](job_builder& b, const std::string&, const std::string&) {         \
        stmt;                                                              \
        b.model_fields = true;                                             \
      },                                                                   \
      field_of(#stmt))
#define SWITCH(stmt) setter([](job_builder& b, const std::string&, const std::string&) { stmt; }, field_of(#stmt))

flag_def value(const char* name, const char* aliases, const char* value_name, const char* def, const char* group,
               const char* help, setter h, int priority = 1) {
  flag_def d;
  d.info.name = name;
  std::string a = aliases;
  std::size_t pos = 0;
  while (pos < a.size()) {
    std::size_t end = a.find(' ', pos);
    if (end == std::string::npos) end = a.size();
    if (end > pos) d.info.aliases.push_back(a.substr(pos, end - pos));
    pos = end + 1;
  }
  d.info.value_name = value_name;
  d.info.default_value = def;
  d.info.group = group;
  d.info.help = help;
  d.info.fields = std::move(h.fields);
  d.priority = priority;
  d.apply = std::move(h.apply);
  return d;
}

flag_def swtch(const char* name, const char* aliases, const char* group, const char* help, setter h) {
  flag_def d = value(name, aliases, "", "off", group, help, std::move(h));
  d.takes_value = false;
  return d;
}

/// --window-size: Megatron's (left, right) tuple, handed to the attention kernel as flash-attention's
/// window (query i sees keys i − left … i + right: left + 1 tokens when causal; gpt-oss's 128-token window
/// is "127,0" in Megatron-LM's examples/post_training/modelopt/conf/openai/gpt-oss-120b.sh), or one
/// number W, the tokens a query sees (§1.7's sliding_window).
std::int64_t parse_window_size(const std::string& v, const std::string& f) {
  std::string s;
  for (char c : v)
    if (c != '(' && c != ')' && c != ' ') s += c;
  const auto comma = s.find(',');
  if (comma == std::string::npos) return to_int_min(s, f, 1);
  const std::string right = s.substr(comma + 1);
  if (right != "0" && right != "-1") {
    throw input_error(f + " '" + v + "': only causal windows (left, 0) are modelled, got right = " + right);
  }
  const std::int64_t left = to_int_min(s.substr(0, comma), f, 0);
  return left < std::numeric_limits<std::int64_t>::max() ? left + 1 : left;  // finalize_model bounds it
}

/// --bf16, --fp16, --fp32: one precision; two different ones contradict (Megatron-LM asserts "not (fp16 and
/// bf16)"), the same one twice is the same request.
void set_precision(job_builder& b, dtype d, const std::string& flag) {
  // Given twice where one source gives it (the user's flags, or the launch line): a contradiction. A later
  // source overrides an earlier one (the user's flags a preset's).
  if (!b.precision_flag.empty() && b.precision_source == b.source && b.job.training.precision != d) {
    throw input_error(b.precision_flag + " and " + flag + " contradict each other: give one precision");
  }
  b.job.training.precision = d;
  b.precision_flag = flag;
  b.precision_source = b.source;
}

void set_model(job_builder& b, const std::string& v, const std::string&) {
  b.job.model = resolve_model(v);
  b.model_chosen = true;
}

void set_cluster(job_builder& b, const std::string& v, const std::string&) {
  const bool is_file = v.find('/') != std::string::npos || v.ends_with(".yaml") || v.ends_with(".yml") ||
                       v.ends_with(".json");
  b.job.cluster = is_file ? load_cluster_file(v) : find_cluster(v);
}

}  // namespace

const std::vector<flag_def>& flag_table() {
  static const std::vector<flag_def> table = [] {
    std::vector<flag_def> t;
    // ---- model ----
    t.push_back(value("--model", "", "NAME|FILE", "(none)", "model",
                      "catalog model (`trainplan models`), our YAML/JSON file, or a Hugging Face config.json",
                      setter(set_model, "model"), 0));
    t.push_back(value("--num-layers", "", "N", "from --model", "model", "transformer layers", MODEL_INT(num_layers)));
    t.push_back(value("--hidden-size", "", "N", "from --model", "model", "hidden size h", MODEL_INT(hidden_size)));
    t.push_back(value("--ffn-hidden-size", "", "N", "4h, or int(8h/3/64)·64 with --swiglu", "model", "MLP width f",
                      MODEL_INT(ffn_hidden_size)));
    t.push_back(value("--num-attention-heads", "", "N", "from --model", "model", "attention heads a",
                      MODEL_INT(num_attention_heads)));
    t.push_back(swtch("--group-query-attention", "", "model", "grouped-query attention (with --num-query-groups)",
                      MODEL_SWITCH((void)b)));
    t.push_back(value("--num-query-groups", "--num-key-value-heads", "N", "heads (MHA)", "model", "key/value groups g",
                      MODEL_INT(num_query_groups)));
    t.push_back(value("--kv-channels", "", "N", "h/a", "model", "head dim", MODEL_INT(kv_channels)));
    t.push_back(value("--seq-length", "--seq-len", "N", "from --model", "model", "sequence length s",
                      MODEL_INT(seq_length)));
    t.push_back(value("--max-position-embeddings", "", "N", "seq length", "model", "rows of the learned position table",
                      MODEL_INT(max_position_embeddings)));
    t.push_back(value("--vocab-size", "", "N", "from --model", "model", "vocabulary before padding",
                      MODEL_INT(vocab_size)));
    t.push_back(value("--padded-vocab-size", "", "N", "padded", "model", "vocabulary after padding (no further padding)",
                      MODEL_INT(padded_vocab_size)));
    // Megatron-DeepSpeed's --pad-vocab-size-to N (megatron/tokenizer/tokenizer.py, _vocab_size_with_padding):
    // the padded vocabulary is N itself (BLOOM's 250,880).
    t.push_back(value("--pad-vocab-size-to", "", "N", "padded", "model",
                      "vocabulary after padding, Megatron-DeepSpeed's spelling (= --padded-vocab-size)",
                      MODEL_INT(padded_vocab_size)));
    t.push_back(value("--make-vocab-size-divisible-by", "", "N", "128", "model",
                      "pad the vocabulary to a multiple of this × TP", MODEL_INT(make_vocab_size_divisible_by)));
    t.push_back(swtch("--swiglu", "", "model", "SwiGLU MLP", MODEL_SWITCH(b.job.model.activation = activation_kind::swiglu)));
    // --quick-geglu (gpt-oss): a gated unit of quick-GELU halves (argument_utils.py: gated_linear_unit,
    // activation_func quick_gelu), priced as GeGLU; without --swiglu Megatron's default width stays 4h.
    t.push_back(swtch("--quick-geglu", "", "model", "gated quick-GELU MLP (gpt-oss; priced as GeGLU)",
                      MODEL_SWITCH(b.job.model.activation = activation_kind::geglu; b.quick_geglu = true)));
    t.push_back(swtch("--squared-relu", "", "model", "squared-ReLU MLP",
                      MODEL_SWITCH(b.job.model.activation = activation_kind::squared_relu)));
    t.push_back(value("--activation", "", "NAME", "gelu", "model", "gelu, relu, squared_relu, swiglu, geglu, reglu",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.model.activation = parse_activation(v, f);
                        b.model_fields = true;
                      }, "model.activation")));
    t.push_back(swtch("--untie-embeddings-and-output-weights", "", "model", "separate output layer",
                      MODEL_SWITCH(b.job.model.tie_embeddings = false)));
    t.push_back(value("--position-embedding-type", "", "TYPE", "learned_absolute", "model",
                      "learned_absolute, rope, alibi or none",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        // Megatron's yarn is RoPE whose cos and sin YaRN rescales (read after the flags).
                        b.yarn = v == "yarn";
                        try {
                          b.job.model.position_embedding =
                              b.yarn ? position_embedding_kind::rope : parse_position_embedding(v, f);
                        } catch (const input_error& e) {
                          throw input_error(std::string(e.what()) + ", yarn");
                        }
                        b.model_fields = true;
                      }, "model.position_embedding")));
    t.push_back(value("--rotary-scaling-factor", "", "F", "1", "model",
                      "YaRN's scaling factor with --position-embedding-type yarn (its concentration factor picks "
                      "Megatron-Core's RoPE kernel; §5.3)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.yarn_factor = to_between(v, f, 1e-6, 1e6, "");
                      }, "model.rope_yarn_factor")));
    t.push_back(value("--mscale", "", "F", "1", "model", "YaRN's mscale with --position-embedding-type yarn (§5.3)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.yarn_mscale = to_between(v, f, 0, 1e3, "");
                      }, "model.rope_yarn_factor")));
    t.push_back(value("--mscale-all-dim", "", "F", "0", "model",
                      "YaRN's mscale_all_dim with --position-embedding-type yarn (§5.3)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.yarn_mscale_all_dim = to_between(v, f, 0, 1e3, "");
                      }, "model.rope_yarn_factor")));
    // ModelOpt's --enable-gpt-oss (megatron/post_training/model_builder.py): the YaRN-scaled rotary
    // embedding of gpt-oss (yarn_rotary_scaling_factor 32.0), no position table.
    t.push_back(swtch("--enable-gpt-oss", "", "model",
                      "ModelOpt: gpt-oss's YaRN rotary positions (= rope, YaRN factor 32: Megatron-Core's unfused "
                      "RoPE; §5.3)",
                      MODEL_SWITCH(b.job.model.position_embedding = position_embedding_kind::rope;
                                   b.job.model.rope_yarn_factor = 32)));
    t.push_back(swtch("--use-rotary-position-embeddings", "", "model", "= --position-embedding-type rope",
                      MODEL_SWITCH(b.job.model.position_embedding = position_embedding_kind::rope)));
    t.push_back(swtch("--no-position-embedding", "", "model", "= --position-embedding-type none",
                      MODEL_SWITCH(b.job.model.position_embedding = position_embedding_kind::none)));
    t.push_back(value("--normalization", "", "NAME", "LayerNorm", "model", "LayerNorm or RMSNorm",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.model.norm = parse_norm(v, f);
                        b.model_fields = true;
                      }, "model.norm")));
    t.push_back(swtch("--disable-bias-linear", "", "model", "no biases on linear layers",
                      MODEL_SWITCH(b.job.model.add_bias_linear = false)));
    t.push_back(swtch("--add-qkv-bias", "", "model", "bias on QKV only", MODEL_SWITCH(b.job.model.add_qkv_bias = true)));
    t.push_back(swtch("--embed-layernorm", "--embedding-norm", "model", "norm after the word embedding (BLOOM)",
                      MODEL_SWITCH(b.job.model.embedding_norm = true)));
    t.push_back(value("--attention-dropout", "", "P", "0.1", "model", "attention dropout probability",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.model.attention_dropout = to_double(v, f);
                      }, "model.attention_dropout")));
    t.push_back(value("--hidden-dropout", "", "P", "0.1", "model", "hidden dropout probability",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.model.hidden_dropout = to_double(v, f);
                      }, "model.hidden_dropout")));
    t.push_back(value("--num-experts", "", "N", "0 (dense)", "model", "MoE experts", MODEL_INT_MIN(moe.num_experts, 0)));
    t.push_back(value("--moe-router-topk", "", "K", "2", "model", "experts per token", MODEL_INT(moe.router_topk)));
    t.push_back(value("--moe-ffn-hidden-size", "", "N", "--ffn-hidden-size", "model", "FFN width of one expert",
                      MODEL_INT(moe.expert_ffn_hidden_size)));
    t.push_back(value("--moe-shared-expert-intermediate-size", "", "N", "0", "model", "total width of shared experts",
                      MODEL_INT_MIN(moe.shared_expert_ffn_hidden_size, 0)));
    t.push_back(value("--moe-layer-freq", "", "N|PATTERN", "1", "model",
                      "every N-th layer is MoE, or a per-layer list such as ([0]*3+[1]*58)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        moe_spec& x = b.job.model.moe;
                        if (!v.empty() && (v[0] == '[' || v[0] == '(')) {
                          x.layer_pattern = parse_layer_pattern(v, f);
                        } else {
                          x.layer_freq = to_int_min(v, f, 1);
                          x.layer_pattern.clear();
                          x.first_dense_layers = 0;
                        }
                        b.model_fields = true;
                      }, "model.moe.layer_freq model.moe.layer_pattern")));
    t.push_back(swtch("--moe-shared-expert-gate", "", "model", "sigmoid gate on the shared experts (Qwen2-MoE)",
                      MODEL_SWITCH(b.job.model.moe.shared_expert_gate = true)));
    t.push_back(swtch("--moe-router-enable-expert-bias", "", "model", "per-expert score bias (DeepSeek-V3)",
                      MODEL_SWITCH(b.job.model.moe.expert_score_bias = true)));
    t.push_back(value("--moe-router-num-groups", "", "N", "0 (unlimited)", "model",
                      "expert groups for group-limited routing (nodes of the EP group: node-limited); 0: off",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        moe_spec& x = b.job.model.moe;
                        x.router_num_groups = to_int_min(v, f, 0);
                        if (x.router_num_groups == 0) x.router_group_topk = 0;  // unlimited routing
                        b.model_fields = true;
                      }, "model.moe.router_num_groups")));
    t.push_back(value("--moe-router-group-topk", "", "K", "0", "model", "groups a token may be routed to",
                      MODEL_INT_MIN(moe.router_group_topk, 0)));
    t.push_back(value("--moe-expert-capacity-factor", "", "F", "none (dropless)", "model",
                      "tokens an expert takes, × the balanced share",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.model.moe.capacity_factor = to_double(v, f);
                        b.model_fields = true;
                      }, "model.moe.capacity_factor")));
    // Every expert's input padded to the capacity: the rows §5.1 and §3.4.3 already give each local expert
    // under a capacity factor (the busiest expert's), so the estimate is the same, now exact.
    t.push_back(swtch("--moe-pad-expert-input-to-capacity", "", "model",
                      "pad each expert's tokens to the capacity (needs --moe-expert-capacity-factor; §5.1)",
                      SWITCH(b.moe_pad_to_capacity = true)));
    t.push_back(value("--moe-load-imbalance", "", "F", "1.0 (balanced)", "model",
                      "dropless routing: busiest expert's tokens over the balanced share",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.model.moe.load_imbalance = to_double(v, f);
                        b.model_fields = true;
                      }, "model.moe.load_imbalance")));
    t.push_back(swtch("--multi-latent-attention", "", "model", "multi-head latent attention (DeepSeek)",
                      with_fields(MODEL_SWITCH(b.mla_requested = true), "model.multi_latent_attention")));
    t.push_back(value("--q-lora-rank", "", "N", "none (direct queries)", "model", "MLA query compression rank",
                      MODEL_INT_MIN(mla.q_lora_rank, 0)));
    t.push_back(value("--kv-lora-rank", "", "N", "32", "model", "MLA key/value compression rank", MODEL_INT(mla.kv_lora_rank)));
    t.push_back(value("--qk-head-dim", "", "N", "128", "model", "MLA query/key head dim without RoPE",
                      MODEL_INT(mla.qk_head_dim)));
    t.push_back(value("--qk-pos-emb-head-dim", "", "N", "64", "model", "MLA decoupled RoPE head dim",
                      MODEL_INT(mla.qk_pos_emb_head_dim)));
    t.push_back(value("--v-head-dim", "", "N", "128", "model", "MLA value head dim", MODEL_INT(mla.v_head_dim)));
    t.push_back(swtch("--qk-layernorm", "", "model", "norms over query and key heads (Qwen3, Gemma 3)",
                      MODEL_SWITCH(b.job.model.qk_norm = true)));
    t.push_back(value("--activation-func-clamp-value", "", "F", "none", "model",
                      "the GLU's clamp of its fc1 output (gpt-oss: 7): free inside the fused activation, two "
                      "clamp kernels and a saved tensor more where the GLU runs unfused (§3.4, §5.3)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.model.glu_clamp_limit = to_positive(v, f);
                        b.model_fields = true;
                      }, "model.glu_clamp_limit")));
    t.push_back(value("--softmax-type", "", "TYPE", "vanilla", "model",
                      "vanilla, off-by-one, or learnable (a learned sink per head: gpt-oss)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.model.attention_sinks =
                            parse_enum<bool>(v, f, {{"vanilla", false}, {"off-by-one", false}, {"learnable", true}});
                        b.model_fields = true;
                      }, "model.attention_sinks")));
    t.push_back(value("--mtp-num-layers", "", "N", "0", "model", "multi-token-prediction depth",
                      MODEL_INT_MIN(mtp_num_layers, 0)));
    t.push_back(value("--window-size", "", "W|(L,0)", "none (full attention)", "model",
                      "sliding-window attention over the last W tokens, or Megatron's (left, 0) tuple: left + 1 tokens",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.model.sliding_window = parse_window_size(v, f);
                        b.model_fields = true;
                      }, "model.sliding_window")));
    t.push_back(value("--window-attn-skip-freq", "", "N|PATTERN", "none (every layer windowed)", "model",
                      "every N-th layer attends fully, or a per-layer list (1: windowed)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        model_spec& m = b.job.model;
                        if (!v.empty() && (v[0] == '[' || v[0] == '(')) {
                          m.window_pattern = parse_layer_pattern(v, f);
                        } else {
                          m.window_skip_freq = to_int_min(v, f, 1);
                          m.window_pattern.clear();
                        }
                        b.model_fields = true;
                      }, "model.window_skip_freq model.window_pattern")));
    t.push_back(value("--window-kind", "", "KIND", "sliding", "model",
                      "sliding (last W tokens) or chunked (fixed chunks of W: Llama 4)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.model.window = parse_window_kind(v, f);
                        b.model_fields = true;
                      }, "model.window")));
    t.push_back(value("--hybrid-layer-pattern", "--hybrid-override-pattern", "PATTERN", "none (a transformer)", "model",
                      "hybrid model, one character per layer: M Mamba-2, * attention, - MLP, E MoE; | ends a "
                      "pipeline segment (PP × VPP segments, in model order; §2.2.1)",
                      setter([](job_builder& b, const std::string& v, const std::string&) {
                        b.hybrid_segments = hybrid_pipeline_segments(v);
                        std::string layers = v;
                        std::erase(layers, '|');
                        b.job.model.hybrid_pattern = layers;
                        b.model_fields = true;
                        b.explicit_fields.push_back("hybrid_pattern");
                      }, "model.hybrid_pattern parallel.pipeline_layout")));
    t.push_back(value("--mamba-state-dim", "", "N", "128", "model", "Mamba-2 state size per group",
                      MODEL_INT(mamba.state_dim)));
    t.push_back(value("--mamba-head-dim", "", "N", "64", "model", "Mamba-2 head dim", MODEL_INT(mamba.head_dim)));
    t.push_back(value("--mamba-num-groups", "", "N", "8", "model", "Mamba-2 groups sharing B and C",
                      MODEL_INT(mamba.num_groups)));
    t.push_back(value("--mamba-num-heads", "", "N", "2h / head dim", "model", "Mamba-2 heads",
                      MODEL_INT(mamba.num_heads)));
    // ---- parallel ----
    t.push_back(value("--tensor-model-parallel-size", "--tp", "N", "1", "parallel", "tensor parallel size t",
                      INT_FIELD(b.job.parallel.tp)));
    t.push_back(value("--pipeline-model-parallel-size", "--pp", "N", "1", "parallel", "pipeline stages p",
                      INT_FIELD(b.job.parallel.pp)));
    t.push_back(value("--context-parallel-size", "--cp", "N", "1", "parallel", "context parallel size",
                      INT_FIELD(b.job.parallel.cp)));
    t.push_back(value("--expert-model-parallel-size", "--ep", "N", "1", "parallel", "expert parallel size",
                      INT_FIELD(b.job.parallel.ep)));
    t.push_back(value("--expert-tensor-parallel-size", "--etp", "N", "TP", "parallel",
                      "tensor parallel size of the experts (1 with TP > 1: parallel folding)",
                      INT_FIELD_MIN(b.job.parallel.etp, 1)));
    t.push_back(value("--moe-token-dispatcher-type", "", "KIND", "allgather (Megatron), alltoall (DeepSpeed, FSDP)",
                      "parallel", "MoE token dispatch: allgather, alltoall or flex (DeepEP)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.parallel.moe_dispatcher = parse_enum(v, f, kMoeDispatcherNames);
                      }, "parallel.moe_dispatcher")));
    t.push_back(swtch("--moe-enable-deepep", "", "parallel", "DeepEP dispatch (= --moe-token-dispatcher-type flex)",
                      SWITCH(b.job.parallel.moe_dispatcher = moe_dispatcher_kind::flex)));
    t.push_back(value("--moe-flex-dispatcher-backend", "", "KIND", "deepep", "parallel",
                      "the flex dispatcher's kernels: deepep or hybridep (same traffic; HybridEP's preallocated "
                      "buffers; §4.2.5, §3.7)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        if (v == "ncclep") {
                          throw input_error(f + " ncclep (NCCL EP through Transformer Engine) would change the "
                                                "estimate, which trainplan does not model; deepep or hybridep");
                        }
                        b.job.parallel.flex_backend = parse_enum(v, f, kMoeFlexBackendNames);
                      }, "parallel.flex_backend")));
    for (const char* name : {"--moe-flex-dispatcher-num-sms", "--moe-deepep-num-sms", "--moe-hybridep-num-sms"}) {
      t.push_back(value(name, "", "N", "the backend's (DeepEP 20)", "parallel",
                        "SMs of the flex dispatcher's kernels (HybridEP: at least 8; DeepEP: its 20; §4.2.5)",
                        INT_FIELD_MIN(b.job.parallel.flex_dispatch_sms, 1)));
    }
    t.push_back(value("--dp", "--data-parallel-size", "N", "world/(TP·PP·CP)", "parallel",
                      "data parallel size (sets the world size when no GPU count is given)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.parallel.dp = to_int(v, f);
                        b.dp_given = true;
                      }, "parallel.dp")));
    t.push_back(value("--num-layers-per-virtual-pipeline-stage", "--vpp-layers", "N", "0 (no interleaving)", "parallel",
                      "layers per model chunk: interleaved 1F1B", INT_FIELD_MIN(b.job.parallel.num_layers_per_virtual_stage, 0)));
    t.push_back(value("--virtual-pipeline-model-parallel-size", "--vpp", "N", "1", "parallel",
                      "model chunks per pipeline rank (sets the layers per virtual stage)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.parallel.vpp = to_int(v, f);
                        if (b.job.parallel.vpp < 1) throw input_error(f + " must be a positive integer, got " + v);
                      }, "parallel.vpp")));
    t.push_back(value("--decoder-first-pipeline-num-layers", "", "N", "even split", "parallel",
                      "layers on the first pipeline stage", INT_FIELD_MIN(b.job.parallel.first_stage_layers, 0)));
    t.push_back(value("--decoder-last-pipeline-num-layers", "", "N", "even split", "parallel",
                      "layers on the last pipeline stage", INT_FIELD_MIN(b.job.parallel.last_stage_layers, 0)));
    t.push_back(swtch("--sequence-parallel", "--sp", "parallel", "Megatron sequence parallelism",
                      SWITCH(b.job.parallel.sequence_parallel = true)));
    t.push_back(swtch("--embedding-as-stage", "", "parallel",
                      "each embedding takes one layer slot of its pipeline stage (BLOOM)",
                      SWITCH(b.job.parallel.embedding_as_stage = true)));
    t.push_back(swtch("--account-for-embedding-in-pipeline-split", "", "parallel",
                      "Megatron-Core: the embedding counts as one layer of the pipeline split (§2.2)",
                      SWITCH(b.job.parallel.account_embedding_in_split = true)));
    t.push_back(swtch("--account-for-loss-in-pipeline-split", "", "parallel",
                      "Megatron-Core: the loss counts as one layer of the pipeline split (§2.2)",
                      SWITCH(b.job.parallel.account_loss_in_split = true)));
    t.push_back(value("--pipeline-model-parallel-layout", "", "PATTERN", "the split the flags above give", "parallel",
                      "Megatron-Core: every layer's pipeline stage, e.g. \"Et*3|(tt|)*29,m|L\": stages split by |, "
                      "E embedding, t transformer layer, m MTP layer, L loss; PP × VPP stages give VPP (§2.2.1)",
                      setter([](job_builder& b, const std::string& v, const std::string&) {
                        b.job.parallel.layout_stages = parse_pipeline_layout(v);
                      }, "parallel.pipeline_layout")));
    t.push_back(value("--rank-order", "", "ORDER", "tp-cp-ep-dp-pp", "parallel",
                      "rank order of the parallel dimensions, fastest first (Megatron's order string)",
                      setter([](job_builder& b, const std::string& v, const std::string&) {
                        b.job.parallel.rank_order = parse_rank_order(v);
                      }, "parallel.rank_order")));
    // Megatron-LM's --use-tp-pp-dp-mapping (training/initialize.py): the order tp-cp-ep-pp-dp instead of
    // tp-cp-ep-dp-pp, so the pipeline's ranks sit closer than the data-parallel replicas.
    t.push_back(swtch("--use-tp-pp-dp-mapping", "", "parallel", "= --rank-order tp-cp-ep-pp-dp",
                      setter([](job_builder& b, const std::string&, const std::string&) {
                        b.job.parallel.rank_order = parse_rank_order("tp-cp-ep-pp-dp");
                      }, "parallel.rank_order")));
    t.push_back(value("--microbatch-group-size-per-virtual-pipeline-stage", "", "N", "PP", "parallel",
                      "interleaved schedule: micro-batches run back to back in a chunk before the next (§5.4)",
                      INT_FIELD_MIN(b.job.parallel.microbatch_group_size, 1)));
    t.push_back(value("--cp-comm-type", "", "KIND", "the framework's (megatron: p2p; fsdp: all_gather)", "parallel",
                      "context-parallel exchange: p2p (K/V ring; PyTorch's alltoall rotation), all_gather (K/V) or a2a "
                      "(Q, K, V, output; Transformer Engine only)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        if (v == "a2a+p2p") {
                          throw input_error(f + " a2a+p2p: hierarchical context parallelism "
                                            "(--hierarchical-context-parallel-sizes) is not modelled; p2p, "
                                            "all_gather or a2a are");
                        }
                        b.job.parallel.cp_comm = parse_enum<cp_comm_kind>(
                            v, f, {{"p2p", cp_comm_kind::p2p}, {"all_gather", cp_comm_kind::all_gather},
                                   {"a2a", cp_comm_kind::a2a}});
                      }, "parallel.cp_comm")));
    // Megatron-DeepSpeed's DeepSpeed-Ulysses (megatron/arguments.py --ds-sequence-parallel-size;
    // deepspeed/sequence/layer.py DistributedAttention): the sequence split over N ranks, Q, K and V
    // all-to-all'd to whole sequences of heads/N before the attention and the output back after, gradients
    // reduced and ZeRO partitioned over data × sequence parallel: Megatron-Core's CP with --cp-comm-type a2a
    // (docs/formulas.md §4.2.2).
    t.push_back(value("--ds-sequence-parallel-size", "", "N", "1", "parallel",
                      "DeepSpeed-Ulysses sequence parallelism (= --context-parallel-size N --cp-comm-type a2a)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.parallel.cp = to_int_min(v, f, 1);
                        if (b.job.parallel.cp > 1) b.job.parallel.cp_comm = cp_comm_kind::a2a;
                      }, "parallel.cp parallel.cp_comm")));
    t.push_back(swtch("--scatter-gather-tensors-in-pipeline", "", "parallel",
                      "legacy Megatron: send 1/t of each activation between stages, all-gather over TP",
                      SWITCH(b.job.parallel.pp_scatter_gather = true)));
    t.push_back(value("--pp-partition-method", "", "METHOD", "type:transformer", "parallel",
                      "Megatron-DeepSpeed: 'type:transformer|embedding' = --embedding-as-stage",
                      [](job_builder& b, const std::string& v, const std::string& f) {
                        if (v == "type:transformer|embedding" || v == "type:transformer|embed") {
                          b.job.parallel.embedding_as_stage = true;
                        } else if (v != "type:transformer") {
                          throw input_error(f + " '" + v + "' is not modelled; use type:transformer or type:transformer|embedding");
                        }
                      }));
    // ---- training ----
    t.push_back(value("--micro-batch-size", "--mbs", "N", "1", "training", "micro-batch size b",
                      INT_FIELD(b.job.training.micro_batch_size)));
    t.push_back(value("--global-batch-size", "--gbs", "N", "MBS×DP", "training", "global batch size (samples)",
                      INT_FIELD_MIN(b.job.training.global_batch_size, 1)));
    t.push_back(value("--gradient-accumulation-steps", "", "N", "none", "training",
                      "DeepSpeed's gradient_accumulation_steps: GBS = MBS × N × DP (checked against --gbs)",
                      INT_FIELD_MIN(b.job.training.gradient_accumulation_steps, 1)));
    {
      flag_def bf16 = swtch("--bf16", "", "training", "bf16 mixed precision",
                            setter([](job_builder& b, const std::string&, const std::string& f) { set_precision(b, dtype::bf16, f); },
                                   "training.precision"));
      bf16.info.default_value = "on (bf16 unless --fp16 or --fp32)";  // the precision's default, not the switch's
      t.push_back(std::move(bf16));
    }
    t.push_back(swtch("--fp16", "", "training", "fp16 mixed precision",
                      setter([](job_builder& b, const std::string&, const std::string& f) { set_precision(b, dtype::fp16, f); },
                             "training.precision")));
    t.push_back(swtch("--fp32", "", "training", "fp32 training",
                      setter([](job_builder& b, const std::string&, const std::string& f) { set_precision(b, dtype::fp32, f); },
                             "training.precision")));
    t.push_back(value("--fp8-format", "", "FORMAT", "none (bf16 GEMMs)", "training",
                      "FP8 linear layers through Transformer Engine: e4m3 or hybrid (e5m2 gradients)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.training.fp8 = parse_enum(v, f, kFp8FormatNames);
                      }, "training.fp8")));
    t.push_back(value("--fp8-recipe", "", "RECIPE", "delayed (fsdp: tensorwise, torchao's)", "training",
                      "FP8 scaling: delayed, tensorwise, mxfp8 (Blackwell) or blockwise",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.training.fp8_scaling = parse_enum(v, f, kFp8RecipeNames);
                        b.job.training.fp8_scaling_set = true;
                      }, "training.fp8_scaling")));
    t.push_back(swtch("--fp8-param-gather", "", "training", "keep parameters and all-gather them in FP8",
                      SWITCH(b.job.training.fp8_param_gather = true)));
    t.push_back(swtch("--fp8-precompute-scale", "", "training",
                      "torchtitan's precompute_float8_dynamic_scale_for_fsdp: the float8 weights' amax in one "
                      "all-reduce after the step, not one per weight before each all-gather (fsdp with "
                      "--fp8-param-gather, tensorwise; §4.2.4)",
                      SWITCH(b.job.training.fp8_precompute_scale = true)));
    t.push_back(value("--framework", "", "NAME", "megatron", "training", "megatron, deepspeed or fsdp",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.training.framework = parse_enum<framework_kind>(
                            v, f,
                            {{"megatron", framework_kind::megatron},
                             {"deepspeed", framework_kind::deepspeed},
                             {"fsdp", framework_kind::fsdp}});
                      }, "training.framework")));
    // A DeepSpeed JSON config: read_flags expands it into the flags of its keys (deepspeed_config.cc).
    t.push_back(value("--deepspeed-config", "", "FILE", "none", "training",
                      "DeepSpeed JSON config: its ZeRO stage, precision, offload, buckets and batch (other keys refused)",
                      setter([](job_builder&, const std::string&, const std::string&) {})));
    // A torchtitan TOML config: parse_job_fields expands it into the flags of its keys (torchtitan_config.cc).
    t.push_back(value("--torchtitan-config", "", "FILE", "none", "training",
                      "torchtitan TOML config (a launch line's --job.config_file): model flavour, degrees, batch, "
                      "checkpointing, float8 (other keys refused)",
                      setter([](job_builder&, const std::string&, const std::string&) {})));
    // A NeMo 1 YAML config: parse_job_fields expands it into the flags of its keys (nemo_config.cc).
    t.push_back(value("--nemo-config", "", "FILE", "none", "training",
                      "NeMo 1 Megatron GPT YAML (a launch line's --config-path/--config-name, NeMo-Framework-Launcher's "
                      "conf/training): model, parallel sizes, batch, precision, checkpointing, optimizer (other keys "
                      "refused)",
                      setter([](job_builder& b, const std::string&, const std::string&) {
                        b.job.training.megatron_lm_arg_checks = false;  // Megatron-Bridge runs no validate_args
                      })));
    // A Megatron-Bridge ConfigContainer YAML: parse_job_fields expands it into the flags of its fields (bridge_config.cc).
    t.push_back(value("--bridge-config", "", "FILE", "none", "training",
                      "Megatron-Bridge's resolved config YAML (ConfigContainer.to_yaml, written beside a run): model, "
                      "parallel sizes, batch, mixed_precision, comm_overlap, DDP and optimizer (a field not modelled "
                      "refused)",
                      setter([](job_builder& b, const std::string&, const std::string&) {
                        b.job.training.megatron_lm_arg_checks = false;  // Megatron-Bridge runs no validate_args
                      })));
    t.push_back(swtch("--no-gradient-accumulation-fusion", "", "training",
                      "Megatron: the wgrad GEMM writes .grad and a hook adds it into main_grad (§5.9)",
                      SWITCH(b.job.training.gradient_accumulation_fusion = false)));
    t.push_back(swtch("--no-pipeline-parallel", "", "training",
                      "Megatron-DeepSpeed: the DeepSpeed engine without its pipeline (PP 1 only)",
                      SWITCH(b.no_pipeline_engine = true)));
    t.push_back(swtch("--deepspeed", "", "training", "= --framework deepspeed (Megatron-DeepSpeed scripts)",
                      SWITCH(b.job.training.framework = framework_kind::deepspeed)));
    t.push_back(value("--zero-stage", "", "N", "0", "training", "ZeRO stage 0-3 (FSDP: 0 NO_SHARD, 2, 3 FULL_SHARD)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.training.zero_stage = static_cast<int>(std::clamp<std::int64_t>(to_int(v, f), -1, 99));
                      }, "training.zero_stage")));
    t.push_back(swtch("--use-distributed-optimizer", "", "training", "Megatron's distributed optimizer (ZeRO-1)",
                      SWITCH(b.job.training.distributed_optimizer = true)));
    t.push_back(swtch("--use-megatron-fsdp", "", "training",
                      "Megatron-FSDP: Megatron-Core's own FSDP, sharding as --data-parallel-sharding-strategy (§3.1)",
                      SWITCH(b.job.training.megatron_fsdp = true)));
    t.push_back(value("--data-parallel-sharding-strategy", "", "KIND", "optim_grads_params", "training",
                      "Megatron-FSDP's sharding: optim (= the distributed optimizer), optim_grads (ZeRO-2) or "
                      "optim_grads_params (ZeRO-3); no_shard is not modelled",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.training.megatron_fsdp_stage =
                            parse_enum<int>(v, f, {{"optim", 1}, {"optim_grads", 2}, {"optim_grads_params", 3}});
                        b.job.training.megatron_fsdp_strategy_set = true;
                      }, "training.megatron_fsdp_stage")));
    t.push_back(value("--num-distributed-optimizer-instances", "", "N", "1", "training",
                      "HSDP: replicas of the sharded state over DP×CP (Megatron's partial distributed optimizer; §2.5)",
                      INT_FIELD_MIN(b.job.training.dp_replicas, 1)));
    t.push_back(value("--data-parallel-replicate-degree", "", "N", "1", "training",
                      "HSDP: torchtitan/FSDP2's replicate degree, = --num-distributed-optimizer-instances (§2.5)",
                      with_fields(INT_FIELD_MIN(b.job.training.dp_replicas, 1), "training.dp_replicate_degree")));
    t.push_back(swtch("--accumulate-allreduce-grads-in-fp32", "", "training", "fp32 main gradients (forced with bf16)",
                      SWITCH(b.job.training.accumulate_allreduce_grads_in_fp32 = true)));
    t.push_back(swtch("--grad-reduce-in-bf16", "", "training",
                      "Megatron: the gradient buffer and its DP reduction in bf16, not fp32 (NeMo grad_reduce_in_fp32=False; §3.1)",
                      SWITCH(b.job.training.grad_reduce_in_bf16 = true)));
    // Megatron-Core's precision-aware optimizer (megatron/training/arguments.py, optimizer_config.py).
    t.push_back(swtch("--use-precision-aware-optimizer", "", "training",
                      "Megatron-Core: TE's FusedAdam with lower-precision master weights and moments (§3.1)",
                      SWITCH(b.job.training.precision_aware_optimizer = true)));
    auto dtype_flag = [&t](const char* name, const char* fallback, const char* help, dtype training_config::*field,
                           std::vector<std::pair<const char*, dtype>> choices, const char* key) {
      t.push_back(value(name, "", "DTYPE", fallback, "training", help,
                        setter([field, choices](job_builder& b, const std::string& v, const std::string& f) {
                          b.job.training.*field = parse_enum(v, f, choices);
                        }, key)));
    };
    dtype_flag("--main-grads-dtype", "fp32", "precision-aware optimizer: main gradients fp32 or bf16 (§3.1)",
               &training_config::main_grads_dtype, {{"fp32", dtype::fp32}, {"bf16", dtype::bf16}},
               "training.main_grads_dtype");
    dtype_flag("--main-params-dtype", "fp32", "precision-aware optimizer: master weights fp32 or fp16 (§3.1)",
               &training_config::main_params_dtype, {{"fp32", dtype::fp32}, {"fp16", dtype::fp16}},
               "training.main_params_dtype");
    dtype_flag("--exp-avg-dtype", "fp32", "precision-aware optimizer: Adam's first moment fp32, fp16, bf16 or fp8 (§3.1)",
               &training_config::exp_avg_dtype,
               {{"fp32", dtype::fp32}, {"fp16", dtype::fp16}, {"bf16", dtype::bf16}, {"fp8", dtype::fp8}},
               "training.exp_avg_dtype");
    dtype_flag("--exp-avg-sq-dtype", "fp32", "precision-aware optimizer: Adam's second moment fp32, fp16, bf16 or fp8 (§3.1)",
               &training_config::exp_avg_sq_dtype,
               {{"fp32", dtype::fp32}, {"fp16", dtype::fp16}, {"bf16", dtype::bf16}, {"fp8", dtype::fp8}},
               "training.exp_avg_sq_dtype");
    t.push_back(swtch("--overlap-grad-reduce", "", "training",
                      "DP gradient reduction overlapped with the last backward (Megatron; §5.4)",
                      SWITCH(b.job.training.overlap_grad_reduce = true)));
    t.push_back(value("--DDP-impl", "", "KIND", "local", "training",
                      "Megatron-LM's data-parallel wrapper until 2023: local (its own, the gradients all-reduced after "
                      "the backward) or torch (PyTorch's DistributedDataParallel: 25 MiB buckets under the last "
                      "backward, as --overlap-grad-reduce; §5.4)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.training.torch_ddp = parse_enum<bool>(v, f, {{"local", false}, {"torch", true}});
                      }, "training.torch_ddp")));
    t.push_back(swtch("--overlap-param-gather", "", "training",
                      "distributed optimizer's parameter all-gather under the next first forward (Megatron; §5.4)",
                      SWITCH(b.job.training.overlap_param_gather = true)));
    t.push_back(value("--cpu-offloading-num-layers", "", "N", "0 (none)", "training",
                      "activations of the first N layers copied to host memory between forward and backward "
                      "(Megatron, PP 1, no recomputation; §3.4.8, §5.4)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.training.cpu_offload_layers = to_int(v, f);
                      }, "training.cpu_offload_layers")));
    t.push_back(swtch("--defer-embedding-wgrad-compute", "", "training",
                      "output-layer wgrad GEMMs held to the pipeline flush (Megatron, PP > 1; §3.6, §5.4)",
                      SWITCH(b.job.training.defer_embedding_wgrad = true)));
    t.push_back(value("--wgrad-deferral-limit", "", "N", "0 (every micro-batch)", "training",
                      "micro-batches whose output-layer wgrad is deferred (with --defer-embedding-wgrad-compute)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.training.wgrad_deferral_limit = to_int(v, f);
                      }, "training.wgrad_deferral_limit")));
    t.push_back(swtch("--overlap-param-gather-with-optimizer-step", "", "training",
                      "the parameter all-gather starts under the optimizer step too (Megatron, interleaved; §5.4)",
                      SWITCH(b.job.training.overlap_param_gather_with_step = true)));
    t.push_back(swtch("--overlap-moe-expert-parallel-comm", "", "training",
                      "EP all-to-alls of one micro-batch under another's compute (combined 1F1B; §5.5.3)",
                      SWITCH(b.job.training.overlap_moe_ep_comm = true)));
    t.push_back(swtch("--delay-wgrad-compute", "", "training",
                      "combined 1F1B's weight gradients run as cover for the EP dispatch (with "
                      "--overlap-moe-expert-parallel-comm; §5.5.3)",
                      SWITCH(b.job.training.delay_wgrad_compute = true)));
    t.push_back(swtch("--keep-pipeline-outputs", "", "training",
                      "each sent stage output kept until its backward (Megatron-Core's deallocate_pipeline_outputs "
                      "false, as Megatron-Bridge's DeepSeek configs run; Megatron-LM frees it; PP > 1; §3.5)",
                      SWITCH(b.job.training.keep_pipeline_outputs = true)));
    t.push_back(value("--pipelining-output-cache", "", "KIND", "none (torchtitan since 2025-10-22)", "training",
                      "which torch.distributed.pipelining stages keep every micro-batch's output until the step ends: "
                      "none, last-stage (the logits; PyTorch from 2025-05 until torchtitan's return_outputs=False) or "
                      "every-stage (PyTorch before 2025-05) (fsdp, PP > 1; §3.5.1)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        using oc = training_config::output_cache;
                        b.job.training.pipelining_output_cache = parse_enum<oc>(
                            v, f, {{"none", oc::none}, {"last-stage", oc::last_stage}, {"every-stage", oc::every_stage}});
                      }, "training.pipelining_output_cache")));
    t.push_back(swtch("--moe-shared-expert-overlap", "", "training",
                      "shared experts under the EP dispatch/combine all-to-alls (alltoall/flex; §5.5.3)",
                      SWITCH(b.job.training.moe_shared_expert_overlap = true)));
    t.push_back(swtch("--no-overlap-p2p-communication", "", "training",
                      "interleaved schedule: pipeline transfers block the sender (Megatron's default overlaps them; §5.4)",
                      SWITCH(b.job.training.overlap_p2p_comm = false)));
    t.push_back(swtch("--overlap-p2p-communication-warmup-flush", "", "training",
                      "interleaved schedule: the warm-up and cool-down transfers overlap too (by default they block; "
                      "§5.4)",
                      SWITCH(b.job.training.overlap_p2p_warmup_flush = true)));
    t.push_back(swtch("--tp-comm-overlap", "", "training",
                      "SP all-gathers and reduce-scatters overlapped with the linear GEMMs (TE userbuffers; §5.5.1)",
                      SWITCH(b.job.training.tp_comm_overlap = true)));
    t.push_back(swtch("--use-flash-attn", "--flash-attention --use-flash-attn-triton", "training", "flash attention",
                      SWITCH(b.job.training.attention = training_config::attention_backend::fused)));
    // Megatron-Core's --attention-backend (transformer/enums.py AttnBackend; language_module.py
    // _set_attention_backend sets NVTE_FLASH_ATTN / NVTE_FUSED_ATTN from it): flash runs TE's FlashAttention backend (the
    // flash_attn package, FlashAttention-2), fused cuDNN's kernel, auto TE's own choice (cuDNN on Hopper
    // and Blackwell); each keeps no s² score matrix; unfused and local do (§5.2, §5.6).
    using backend = training_config::attention_backend;
    t.push_back(value("--attention-backend", "", "KIND",
                      "the framework's (megatron: cuDNN's fused; fsdp: FlashAttention-2; deepspeed: unfused)",
                      "training",
                      "flash (FlashAttention-2), fused (cuDNN's), auto (the framework's fused kernel, like "
                      "--use-flash-attn), unfused or local",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.training.attention = parse_enum<backend>(
                            v, f, {{"flash", backend::flash2}, {"fused", backend::cudnn}, {"auto", backend::fused},
                                   {"unfused", backend::unfused}, {"local", backend::unfused}});
                      }, "training.attention")));
    // ModelOpt's --export-force-local-attention (megatron/post_training/model_builder.py): Megatron's own
    // DotProductAttention, the unfused core, unless CP > 1 (then TE's, as ModelOpt forces it).
    t.push_back(swtch("--export-force-local-attention", "", "training",
                      "ModelOpt: the unfused attention core (at CP 1)", SWITCH(b.force_local_attention = true)));
    // Megatron-Core's --transformer-impl: transformer_engine (the default, fused attention) or local
    // (Megatron's own modules: the unfused attention core unless --use-flash-attn).
    t.push_back(value("--transformer-impl", "", "IMPL", "transformer_engine", "training",
                      "transformer_engine (fused attention) or local (unfused unless --use-flash-attn)",
                      [](job_builder& b, const std::string& v, const std::string& f) {
                        const bool local = parse_enum<bool>(v, f, {{"transformer_engine", false}, {"local", true}});
                        b.local_transformer_impl = local;
                        if (local && b.job.training.attention == backend::framework_default) {
                          b.job.training.attention = backend::unfused;
                        }
                      }));
    // Megatron-LM's model implementation: Megatron-Core's (the default since 0.8) or the legacy one
    // (megatron/legacy/model/transformer.py), whose flash path keeps a rearranged copy of the output.
    t.push_back(swtch("--use-legacy-models", "", "training",
                      "Megatron-LM's legacy models: flash output rearranged into a second tensor (§3.4)",
                      SWITCH(b.job.training.legacy_models = true)));
    t.push_back(swtch("--use-mcore-models", "", "training", "Megatron-Core models (the default; §3.4)",
                      SWITCH(b.job.training.legacy_models = false)));
    t.push_back(value("--norm-kernel", "", "KIND", "the framework's (fsdp: eager, torchtitan's RMSNorm; else fused)",
                      "training", "an RMSNorm's kernels: fused (one kernel) or eager (PyTorch ops in fp32; §5.3)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        using nk = training_config::norm_kernel;
                        b.job.training.rmsnorm_kernel = parse_enum<nk>(v, f, {{"fused", nk::fused}, {"eager", nk::eager}});
                      }, "training.rmsnorm_kernel")));
    t.push_back(swtch("--torch-compile", "", "training",
                      "torchtitan's torch.compile of each transformer block (compile.enable, components [\"model\"]): "
                      "Inductor's fused RMSNorm, residual add and SwiGLU, and under op SAC only the saved outputs "
                      "the backward reads (fsdp; §3.4.4, §5.3)",
                      SWITCH(b.job.training.torch_compile = true)));
    t.push_back(swtch("--torch-compile-loss", "", "training",
                      "torchtitan's torch.compile of the loss (compile.components \"loss\", its default): "
                      "F.cross_entropy's cast, log-softmax and gradient fused by Inductor, no fp32 copy of the "
                      "logits (fsdp; §3.6, §5.3)",
                      SWITCH(b.job.training.torch_compile_loss = true)));
    t.push_back(swtch("--async-tensor-parallel", "", "training",
                      "torchtitan's async TP (parallelism.enable_async_tensor_parallel, with --torch-compile): "
                      "each TP all-gather and reduce-scatter pipelined with the matmul it feeds or follows, TP "
                      "slices of those GEMMs (fsdp; §5.5.1)",
                      SWITCH(b.job.training.async_tp = true)));
    t.push_back(swtch("--cross-entropy-loss-fusion", "", "training",
                      "Megatron-Core's fused vocab-parallel cross-entropy (fewer passes over the logits; §5.3)",
                      SWITCH(b.job.training.cross_entropy_fusion = true)));
    t.push_back(value("--cross-entropy-fusion-impl", "", "KIND", "native", "training",
                      "the fused loss's kernels (with --cross-entropy-loss-fusion): native (Megatron-Core's) or te "
                      "(Transformer Engine's parallel_cross_entropy: the gradient written into the logits; §3.6)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        using ce = training_config::cross_entropy_impl;
                        b.job.training.cross_entropy_fusion_impl = parse_enum<ce>(v, f, {{"native", ce::native}, {"te", ce::te}});
                      }, "training.cross_entropy_fusion_impl")));
    t.push_back(swtch("--te-cross-entropy-fp32-gradient", "", "training",
                      "with --cross-entropy-fusion-impl te: Transformer Engine from its #3193 (2026-07-09) on, whose "
                      "loss keeps the gradient in a new fp32 tensor (4 bytes per logit more; §3.6)",
                      SWITCH(b.job.training.te_cross_entropy_fp32_gradient = true)));
    // Megatron-LM's --no-bias-swiglu-fusion is store_false into bias_swiglu_fusion: fused unless turned off,
    // in Megatron-Core's MLP (bias_activation_fusion); legacy models and the other frameworks run it unfused.
    auto swiglu_fusion = [](bool fused) {
      return setter([fused](job_builder& b, const std::string&, const std::string&) {
        b.job.training.bias_swiglu_fusion = fused;
        b.job.training.swiglu_fusion_set = true;
      }, "training.bias_swiglu_fusion");
    };
    t.push_back(swtch("--bias-swiglu-fusion", "", "training", "fused bias+SwiGLU (Megatron-Core's default; §3.4)",
                      swiglu_fusion(true)));
    t.push_back(swtch("--no-bias-swiglu-fusion", "", "training",
                      "unfused SwiGLU (the default of legacy models, DeepSpeed and FSDP; §3.4)", swiglu_fusion(false)));
    t.push_back(swtch("--no-bias-gelu-fusion", "", "training",
                      "the GeLU's bias added by a kernel of its own (Megatron's fused bias_gelu off; §5.3)",
                      SWITCH(b.job.training.bias_gelu_fusion = false)));
    t.push_back(swtch("--no-bias-dropout-fusion", "", "training",
                      "bias add, dropout and residual add as separate kernels (Megatron's fused bias_dropout_add "
                      "off; §5.3)",
                      SWITCH(b.job.training.bias_dropout_fusion = false)));
    t.push_back(swtch("--no-rope-fusion", "", "training",
                      "Megatron-Core's unfused RoPE (multiplies, rotate-half and concatenations as PyTorch kernels) "
                      "instead of Transformer Engine's fused kernel (§5.3)",
                      SWITCH(b.job.training.rope_fusion = false)));
    t.push_back(swtch("--moe-permute-fusion", "", "training",
                      "Transformer Engine's fused MoE permute and unpermute (Megatron-Core; off: its PyTorch path, a "
                      "zeroed output filled by scatter_add_ and a dozen index kernels; §5.3)",
                      SWITCH(b.job.training.moe_permute_fusion = true)));
    t.push_back(swtch("--moe-grouped-gemm", "", "training",
                      "the local experts as Transformer Engine's grouped GEMM (Megatron-Core's TEGroupedMLP; off: "
                      "SequentialMLP, each expert's GEMMs and activation launched one after another; §5.1.1)",
                      SWITCH(b.job.training.moe_grouped_gemm = true)));
    t.push_back(swtch("--no-masked-softmax-fusion", "", "training",
                      "scale, mask and softmax of the unfused attention core as PyTorch's separate kernels "
                      "(Megatron's FusedScaleMaskSoftmax falls back to its torch path; §5.3)",
                      SWITCH(b.job.training.masked_softmax_fusion = false)));
    t.push_back(value("--recompute-granularity", "--recompute", "KIND", "none", "training",
                      "none, selective, full, or op (torchtitan's per-op selective checkpointing: FSDP, TP 1; §3.4.4)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.training.recompute = parse_enum<recompute_granularity>(
                            v, f,
                            {{"none", recompute_granularity::none},
                             {"selective", recompute_granularity::selective},
                             {"full", recompute_granularity::full},
                             {"op", recompute_granularity::selective_op}});
                      }, "training.recompute")));
    t.push_back(value("--recompute-modules", "", "LIST", "core_attn", "training",
                      "selective recomputation's modules: core_attn, layernorm, mlp, moe, moe_act, shared_experts, "
                      "mla_up_proj (Megatron-Core; §3.4.4)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        std::uint8_t bits = 0;
                        for (std::size_t at = 0; at <= v.size();) {
                          const std::size_t end = std::min(v.find(',', at), v.size());
                          const std::string name = v.substr(at, end - at);
                          at = end + 1;
                          if (name.empty()) continue;
                          const auto* it = std::find_if(kRecomputeModuleNames.begin(), kRecomputeModuleNames.end(),
                                                        [&](const auto& n) { return name == n.first; });
                          if (it == kRecomputeModuleNames.end()) {
                            std::vector<std::string> names;
                            for (const auto& n : kRecomputeModuleNames) names.emplace_back(n.first);
                            throw input_error(f + ": unknown module '" + name + "'" + did_you_mean(name, names) +
                                              " (core_attn, layernorm, mlp, moe, moe_act, shared_experts, mla_up_proj; "
                                              "Megatron's gdn_*, gdp_* and mhc modules are not modelled)");
                          }
                          bits |= static_cast<std::uint8_t>(it->second);
                        }
                        // An empty list recomputes nothing (Megatron keeps []): none of the modules.
                        b.job.training.recompute_modules = bits;
                        b.recompute_modules_given = true;
                        b.recompute_modules_empty = bits == 0;
                      }, "training.recompute_modules")));
    // Deprecated: = selective with "moe" added to the modules (transformer_config.py).
    t.push_back(swtch("--moe-layer-recompute", "", "training",
                      "= --recompute-granularity selective with the moe module added (Megatron-Core, deprecated)",
                      setter([](job_builder& b, const std::string&, const std::string&) {
                        b.moe_layer_recompute = true;
                      }, "training.recompute_modules")));
    t.push_back(swtch("--recompute-activations", "", "training", "= --recompute-granularity selective",
                      SWITCH(b.job.training.recompute = recompute_granularity::selective)));
    t.push_back(swtch("--checkpoint-activations", "", "training", "= --recompute-granularity full (older Megatron)",
                      SWITCH(b.job.training.recompute = recompute_granularity::full)));
    t.push_back(value("--recompute-method", "", "METHOD", "uniform", "training", "uniform or block",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.training.recompute_method_ = parse_enum<recompute_method>(
                            v, f, {{"uniform", recompute_method::uniform}, {"block", recompute_method::block}});
                      }, "training.recompute_method")));
    t.push_back(value("--recompute-num-layers", "", "N", "1 (with full)", "training",
                      "layers per recompute chunk (uniform) or recomputed per stage (block; 0: none)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.training.recompute_num_layers = to_int(v, f);
                        b.recompute_zero_layers = b.job.training.recompute_num_layers == 0;
                      }, "training.recompute_num_layers")));
    t.push_back(value("--optimizer", "", "NAME", "adam", "training", "adam or sgd",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        // Megatron-LM's other choices (arguments.py --optimizer) keep other states and run other
                        // step math: refused by name, not as unknown values.
                        for (const char* other : {"muon", "dist_muon", "adaptive_muon", "lion", "soap"}) {
                          if (v == other) {
                            throw input_error(f + " " + v + " would change the optimizer's states and step (" +
                                              "Megatron-LM's choice), which trainplan does not model; adam or sgd");
                          }
                        }
                        b.job.training.optimizer =
                            parse_enum<optimizer_kind>(v, f, {{"adam", optimizer_kind::adam}, {"sgd", optimizer_kind::sgd}});
                      }, "training.optimizer")));
    t.push_back(swtch("--offload-optimizer", "--optimizer-cpu-offload --cpu-optimizer", "training",
                      "optimizer states and master weights in CPU memory", SWITCH(b.job.training.offload_optimizer = true)));
    t.push_back(value("--bucket-size-bytes", "", "BYTES", "framework default", "training",
                      "gradient-reduction bucket size", INT_FIELD_MIN(b.job.training.bucket_size_bytes, 1)));
    t.push_back(value("--ddp-bucket-size", "", "N", "max(4e7, 1e6·DP)", "training",
                      "Megatron-Core's gradient bucket, elements, with --overlap-grad-reduce: the first pipeline rank's "
                      "first chunk reduces bucket by bucket under its last backward (§5.4)",
                      INT_FIELD_MIN(b.job.training.ddp_bucket_elements, 1)));
    t.push_back(value("--reduce-bucket-size", "", "N", "5e8 (DeepSpeed)", "training",
                      "gradient-reduction bucket, elements (DeepSpeed zero_optimization.reduce_bucket_size)",
                      INT_FIELD_MIN(b.job.training.bucket_size_elements, 1)));
    t.push_back(value("--grad-accum-dtype", "", "DTYPE", "fp32 with bf16", "training",
                      "DeepSpeed data_types.grad_accum_dtype: fp32, bf16 or fp16",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.training.grad_accum_dtype = parse_enum<dtype>(
                            v, f, {{"fp32", dtype::fp32}, {"bf16", dtype::bf16}, {"fp16", dtype::fp16}});
                        b.job.training.grad_accum_dtype_set = true;
                      }, "training.grad_accum_dtype")));
    t.push_back(value("--overlap-comm", "", "on|off", "on at ZeRO-3, else off", "training",
                      "DeepSpeed overlap_comm: gradient reduction under the backward (§5.5.2)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        using tg = training_config::toggle;
                        b.job.training.overlap_comm = parse_enum<tg>(v, f, {{"on", tg::on}, {"off", tg::off}});
                      }, "training.overlap_comm")));
    t.push_back(value("--zero3-prefetch-bucket-size", "", "N", "50000000 (on)", "training",
                      "ZeRO-3 prefetch bucket, elements (DeepSpeed stage3_prefetch_bucket_size); 0: no prefetch",
                      INT_FIELD_MIN(b.job.training.zero3_prefetch_bucket_elements, 0)));
    t.push_back(value("--zero3-max-reuse-distance", "", "N", "1000000000", "training",
                      "DeepSpeed stage3_max_reuse_distance, elements: kept gathered for a reuse this close "
                      "(a recomputed layer's backward); §4.2.4",
                      INT_FIELD_MIN(b.job.training.zero3_max_reuse_elements, 0)));
    t.push_back(value("--zero3-fetch-overhead-us", "", "US", "0", "training",
                      "ZeRO-3 launch and synchronisation per fetched module per pass, µs (§5.9)",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        const double us = to_double(v, f);
                        if (!(us >= 0 && us <= 1e6)) throw input_error(f + " must be between 0 and 1e6 µs, got " + v);
                        b.job.training.zero3_fetch_overhead_s = us * 1e-6;
                      }, "training.zero3_fetch_overhead_s")));
    t.push_back(value("--zero-grad-reduce", "", "KIND", "all-reduce", "training",
                      "DeepSpeed ZeRO-1/2's gradient reduction per bucket: all-reduce "
                      "(use_multi_rank_bucket_allreduce, today's default) or reduce (a dist.reduce per rank: that key "
                      "off, and DeepSpeed before it); §4.2.4",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        using tg = training_config::toggle;
                        b.job.training.zero_bucket_all_reduce =
                            parse_enum<tg>(v, f, {{"all-reduce", tg::on}, {"reduce", tg::off}});
                      }, "training.zero_bucket_all_reduce")));
    t.push_back(swtch("--zero3-gather-per-parameter", "", "training",
                      "DeepSpeed before 0.5.5: each parameter all-gathered on its own into per-rank views, copied "
                      "back rank by rank (§5.9)",
                      SWITCH(b.job.training.zero3_gather_per_parameter = true)));
    t.push_back(value("--host-overhead-ms", "", "MS", "framework's (deepspeed 3.0, others 0)", "training",
                      "host time per layer per pass the GPU waits for, ms",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        const double ms = to_double(v, f);
                        if (ms < 0 || ms > 1e6) throw input_error(f + " must be between 0 and 1e6 ms, got " + v);
                        b.job.training.host_overhead_per_layer_pass_s = ms * 1e-3;
                      }, "training.host_overhead_per_layer_pass_s")));
    t.push_back(value("--nccl-buffer-mib", "", "MIB", "192", "training", "NCCL buffers per communicator per GPU, MiB",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.training.nccl_buffer_bytes_per_communicator =
                            static_cast<std::int64_t>(to_between(v, f, 0, 1e5, "MiB") * 1048576.0);
                      }, "training.nccl_buffer_bytes_per_communicator")));
    t.push_back(value("--allocator-reserve-fraction", "", "X", "0.08", "training",
                      "caching allocator's reserve above the allocated peak",
                      setter([](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.training.allocator_reserve_fraction = to_double(v, f);
                      }, "training.allocator_reserve_fraction")));
    // ---- hardware ----
    t.push_back(value("--cluster", "", "NAME|FILE", "dgx-h100", "hardware", "catalog cluster or a YAML/JSON file",
                      setter(set_cluster, "cluster"), 0));
    t.push_back(value("--gpu", "", "NAME", "the cluster's", "hardware", "GPU model (replaces the cluster's)",
                      setter([](job_builder& b, const std::string& v, const std::string&) { b.gpu_name = v; }, "cluster.gpu")));
    t.push_back(value("--gpus-per-node", "", "N", "the cluster's", "hardware", "GPUs per node",
                      with_fields(INT_FIELD_MIN(b.gpus_per_node, 1), "cluster.gpus_per_node")));
    t.push_back(value("--num-nodes", "--nnodes", "N", "the cluster's", "hardware", "nodes used",
                      with_fields(INT_FIELD_MIN(b.num_nodes, 1), "cluster.num_nodes")));
    t.push_back(value("--num-gpus", "--world-size", "N", "nodes × GPUs per node", "hardware", "GPUs used",
                      with_fields(INT_FIELD_MIN(b.num_gpus, 1), "num_gpus")));
    t.push_back(value("--gpu-memory-gib", "", "GIB", "the GPU's", "hardware", "usable GPU memory, GiB",
                      setter([](job_builder& b, const std::string& v, const std::string& f) { b.gpu_usable_gib = static_cast<std::int64_t>(to_between(v, f, 0.25, 1e6, "GiB") * 1073741824.0); }, "cluster.gpu.usable_memory_bytes")));
    t.push_back(value("--gpu-peak-tflops", "", "TFLOPS", "the GPU's", "hardware", "dense bf16 peak, TFLOP/s",
                      setter([](job_builder& b, const std::string& v, const std::string& f) { b.gpu_peak_tflops = to_between(v, f, 1, 1e5, "TFLOP/s"); }, "cluster.gpu.peak_bf16_flops")));
    t.push_back(value("--gpu-memory-bandwidth-gb-per-s", "", "GB/S", "the GPU's", "hardware", "HBM bandwidth, 1e9 B/s",
                      setter([](job_builder& b, const std::string& v, const std::string& f) { b.gpu_bandwidth_gb_per_s = to_between(v, f, 1, 1e6, "GB/s"); }, "cluster.gpu.memory_bandwidth_bytes_per_s")));
    t.push_back(value("--intra-node-bandwidth-gb-per-s", "", "GB/S", "the GPU's", "hardware",
                      "NVLink per GPU, one direction, 1e9 B/s",
                      setter([](job_builder& b, const std::string& v, const std::string& f) { b.intra_gb_per_s = to_between(v, f, 0.1, 1e6, "GB/s"); }, "cluster.gpu.intra_node_bandwidth_bytes_per_s")));
    t.push_back(value("--nic-bandwidth-gbit-per-s", "", "GBIT/S", "the cluster's", "hardware", "one NIC, one direction, Gb/s",
                      setter([](job_builder& b, const std::string& v, const std::string& f) { b.nic_gbit_per_s = to_between(v, f, 0.1, 8e5, "Gb/s"); }, "cluster.nic_bandwidth_bytes_per_s")));
    t.push_back(value("--nics-per-node", "", "N", "the cluster's", "hardware", "NICs per node", with_fields(INT_FIELD_MIN(b.nics_per_node, 1), "cluster.nics_per_node")));
    t.push_back(value("--intra-node-latency-us", "", "US", "the cluster's", "hardware", "latency per algorithm step, µs",
                      setter([](job_builder& b, const std::string& v, const std::string& f) { b.intra_latency_us = to_between(v, f, 1e-3, 1e6, "µs"); }, "cluster.intra_node_latency_s")));
    t.push_back(value("--inter-node-latency-us", "", "US", "the cluster's", "hardware", "latency per algorithm step, µs",
                      setter([](job_builder& b, const std::string& v, const std::string& f) { b.inter_latency_us = to_between(v, f, 1e-3, 1e6, "µs"); }, "cluster.inter_node_latency_s")));
    t.push_back(value("--calibration", "", "FILE", "(none: datasheet rates and catalog efficiencies)", "hardware",
                      "trainplan-bench profile: its measured GEMMs, HBM copy rate and link sweeps replace the defaults",
                      setter([](job_builder& b, const std::string& v, const std::string&) { b.calibration_path = v; }, "calibration")));
    t.push_back(value("--cuda-context-mib", "", "MIB", "the GPU's", "hardware", "CUDA context + library workspaces, MiB",
                      setter([](job_builder& b, const std::string& v, const std::string& f) { b.context_mib = static_cast<std::int64_t>(to_between(v, f, 1, 1e6, "MiB") * 1048576.0); }, "cluster.gpu.cuda_context_bytes")));
    return t;
  }();
  return table;
}

}  // namespace trainplan::args_detail
