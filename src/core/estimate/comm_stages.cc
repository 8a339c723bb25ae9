// Pipeline stages grouped into classes that communicate alike, with the per-stage quantities the
// traffic tables count calls by (docs/formulas.md §4.4).
#include <algorithm>
#include <vector>

#include "trainplan/core/base/checked.h"
#include "estimate/comm_detail.h"

namespace trainplan::detail {

namespace {

/// A stage's layers by kind as communication sees them: a window changes no collective, so windowed
/// layers count as their unwindowed kind.
layer_counts comm_kinds(const layer_counts& kinds) {
  layer_counts out{};
  for (std::size_t k = 0; k < kNumLayerKinds; ++k) out[static_cast<std::size_t>(kLayerMakeup[k].unwindowed)] += kinds[k];
  return out;
}

/// What a stage class is made of, from the job once: a class follows from its layers by kind, its
/// ends and the number of stages in it.
struct class_maker {
  double mb;              ///< micro-batches per iteration
  double chunks;          ///< model chunks per pipeline rank (v)
  double gpus_per_stage;
  rank_holdings holds;    ///< what one GPU holds (§2.4)
  bool full_recompute;
  bool uniform_recompute;
  std::int64_t block_layers;  ///< block recomputation: layers recomputed per rank
  bool mlp_recompute;         ///< selective recomputation of the dense MLP module (--recompute-modules mlp)

  void operator()(stage_class& c, std::int64_t stage, std::int64_t count, const layer_counts& kinds, bool first,
                  bool last) const {
    std::int64_t layers = 0, moe_layers = 0, blocks = 0, mlp_blocks = 0;
    for (std::size_t k = 0; k < kNumLayerKinds; ++k) {
      const layer_makeup& mk = kLayerMakeup[k];
      layers += kinds[k];
      moe_layers += mk.moe ? kinds[k] : 0;
      blocks += mk.blocks() * kinds[k];
      mlp_blocks += mk.dense_mlp ? kinds[k] : 0;
    }
    // §4.2.1: uniform recomputes every layer; block the first N layers of each model chunk (MoE layers
    // and blocks among them in proportion).
    const std::int64_t rec = !full_recompute ? 0 : uniform_recompute ? layers : std::min(layers, block_layers);
    const std::int64_t rec_moe = rec == layers ? moe_layers : size_div(moe_layers * rec, layers);
    // §4.2.1: the recomputed dense MLP module (tensor_parallel.checkpoint of the MLP, or te_checkpoint
    // under FP8; transformer_layer.py _forward_mlp) redoes its block's collectives, one block per layer.
    const double rec_blocks = mlp_recompute          ? static_cast<double>(mlp_blocks)
                              : rec == layers        ? static_cast<double>(blocks)
                                                     : static_cast<double>(blocks) * static_cast<double>(rec) /
                                                           static_cast<double>(std::max<std::int64_t>(1, layers));
    const layer_shard held = holds.stage(kinds, first, last);
    c.first_stage = stage;
    c.num_stages = count;
    c.layers = layers;
    c.kinds = kinds;
    c.first = first;
    c.last = last;
    c.dense_params = static_cast<double>(held.dense);
    c.expert_params = static_cast<double>(held.expert);
    c.units = static_cast<double>(layers + (first || last ? 1 : 0));
    c.gpus = gpus_per_stage * static_cast<double>(count);
    // Per micro-batch each model chunk sends its output forward and its input gradient backward; the
    // first chunk of stage 0 receives nothing forward and the last chunk of the last stage sends nothing.
    const double boundaries = 2 * chunks - (first ? 1 : 0) - (last ? 1 : 0);
    c.per = {static_cast<double>(layers) * mb, static_cast<double>(rec) * mb, static_cast<double>(blocks) * mb,
             rec_blocks * mb, static_cast<double>(moe_layers) * mb, static_cast<double>(rec_moe) * mb,
             first ? mb : 0.0, last ? mb : 0.0, boundaries * mb, first || last ? 1.0 : 0.0, 1.0};
  }
};

}  // namespace

void stage_classes(const job_spec& job, const parameter_breakdown& params, std::int64_t microbatches, bool merge,
                   class_list& classes) {
  const model_spec& m = job.model;
  const parallel_config& p = job.parallel;
  const training_config& t = job.training;
  const class_maker make{static_cast<double>(microbatches),
                         static_cast<double>(p.vpp),
                         static_cast<double>(p.tp * p.cp * p.dp),  // GPUs per stage
                         holdings_of(job, params),
                         t.recompute == recompute_granularity::full,
                         t.recompute_method_ == recompute_method::uniform,
                         t.recompute_num_layers * p.vpp,
                         t.recomputes(recompute_module::mlp)};
  auto add = [&](std::int64_t stage, std::int64_t count, const layer_counts& kinds, bool first, bool last)
                 __attribute__((always_inline)) {
    // Everything follows from (layers by kind, first, last): a stage like the one before joins its class.
    if (merge && !classes.empty()) {
      stage_class& b = classes.back();
      if (b.kinds == kinds && b.first == first && b.last == last) {
        b.num_stages += count;
        b.gpus = make.gpus_per_stage * static_cast<double>(b.num_stages);  // `per` is per GPU: unchanged
        return;
      }
    }
    make(classes.append(), stage, count, kinds, first, last);
  };
  // Every layer alike (§2.2): the first stage, the pp − 2 middle ones and the last, as pipeline_layout
  // counts their layers, without walking the stages. finalize_job leaves no stage empty, so DeepSpeed's
  // partition_uniform gives every stage but the last a whole ceil-sized chunk.
  const bool all_alike = !m.is_hybrid() && (!m.is_moe() || (m.moe.layer_freq == 1 && m.moe.first_dense_layers == 0 &&
                                                            m.moe.layer_pattern.empty()));
  if (merge && all_alike && p.layout_stages.empty()) {
    const stage_split& split = job.resolved.split;
    const auto of = [kind = m.is_moe() ? layer_kind::moe : layer_kind::dense](std::int64_t n) {
      layer_counts c{};
      c[static_cast<std::size_t>(kind)] = n;
      return c;
    };
    make(classes.append(), 0, 1, of(split.first), true, p.pp == 1);
    if (p.pp > 2) make(classes.append(), 1, p.pp - 2, of(split.middle), false, false);
    if (p.pp > 1) make(classes.append(), p.pp - 1, 1, of(split.last), false, true);
    return;
  }
  thread_local std::vector<stage_layout> stages;  // reused: no allocation once it has held pp stages
  pipeline_layout(job, stages);
  for (const stage_layout& st : stages) {
    add(st.stage, 1, comm_kinds(st.kinds), st.has_embedding, st.has_output);
  }
}

}  // namespace trainplan::detail
