// Predicted against measured iteration times: the rows, their statistics and the rank correlation
// (docs/formulas.md §5.8). What a row runs is the command line's (trainplan/cli/validate.h builds each
// row's job from its flags); the statistics are the core's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainplan {

struct job_spec;

/// One measured run and what the model predicts for it.
struct validation_row {
  std::string table;               ///< file the row comes from
  std::string group;               ///< seed table it belongs to ("" when none)
  std::string label;               ///< source line or source
  std::string source;              ///< a published row's source (its `source` column; "" for BLOOM's tables)
  std::string date;
  std::vector<std::string> args;   ///< job flags reproducing the row
  double measured_s = 0;
  double measured_tflops = 0;
  /// The source gives model TFLOPs per GPU but no time (Megatron-Core and NeMo tables): the row compares
  /// TFLOPs, error = measured / predicted model TFLOPs − 1 (positive: predicted slower, as for times).
  bool by_tflops = false;
  bool hardware_tflops = false;    ///< the source's TFLOPs count recomputation (Narayanan et al. eq. 3)
  std::string assumed;             ///< conditions the source does not state, as the row's `assumed` column gives them
  double environment_factor = 1;   ///< documented slowdown of the row's environment (§5.8)
  double predicted_s = 0;          ///< model × environment factor
  double predicted_tflops = 0;     ///< as Megatron reports it at the predicted time
  double error = 0;                ///< predicted / measured − 1
  /// |error| with the constants fitted on this row's source refitted without it (leave_one_source_out);
  /// negative where nothing was fitted on the source (its error is already out of sample) or not computed.
  double held_out_abs_error = -1;
  /// The |error| a run out of sample would see: held_out_abs_error where computed, else |error|.
  double out_of_sample_abs_error() const {
    return held_out_abs_error >= 0 ? held_out_abs_error : (error < 0 ? -error : error);
  }
  /// Throughput, what a layout table ranks (§5.8): model FLOPs (trainplan's count, no recomputation) per
  /// second per GPU, over the predicted and over the measured time; a TFLOPs row's measured one is its
  /// predicted one scaled by measured / predicted TFLOPs. Comparable across model sizes, GPU counts and
  /// batches, as a seed table's rows vary them.
  double measured_model_flops_per_gpu_s = 0;
  double predicted_model_flops_per_gpu_s = 0;
  /// Every row ran, so a prediction that it does not fit contradicts the measurement (issue 27). The
  /// time is still compared: the memory estimate is reported, it does not skip the row.
  bool fits = true;
  double peak_reserved_bytes = 0;  ///< the fullest stage's reserved memory per GPU
  double capacity_bytes = 0;       ///< what the GPU offers (usable memory)
  std::string skipped;             ///< why the row has no prediction ("" when it has one)
  /// Peak memory per GPU the source measured (0: none; §3.10), and which statistic it is: "allocated,
  /// last rank" (torch.cuda.max_memory_allocated on the last pipeline rank, Megatron's CI) or "reserved
  /// by PyTorch, busiest rank" (torch.cuda.max_memory_reserved, the largest over the GPUs: torchtitan).
  double measured_memory_bytes = 0;
  std::string memory_metric;
  double predicted_memory_bytes = 0;  ///< the same statistic, predicted
  double memory_error = 0;            ///< predicted / measured − 1
  std::string memory_skipped;         ///< why a measured memory has no prediction ("" when it has one)
  std::string generation;          ///< of the job it ran (generation_of_job: "H100 FP8"), set with its prediction
  std::string framework;           ///< of the job it ran ("megatron", "deepspeed", "fsdp")
};

/// Rank correlation and errors of a set of rows.
struct validation_stats {
  std::string name;
  std::int64_t rows = 0;
  double median_abs_error = 0;
  double max_abs_error = 0;
  /// Spearman of predicted against measured throughput (model FLOPs/s per GPU; memory: bytes). NaN-free: 1
  /// for fewer than 2 distinct values.
  double spearman = 0;
  /// How much less the row predicted fastest measured than the measured fastest row, as a fraction of
  /// the latter's throughput (0: the model picks the fastest; time comparisons only).
  double fastest_shortfall = 0;
  std::int64_t not_fit = 0;        ///< rows (that ran) predicted not to fit
  std::int64_t skipped = 0;        ///< rows without a prediction (a field the source leaves empty, …)
};

/// One leave-one-source-out fold (§5.8): the A100 constants fitted on BLOOM's tables, refitted without
/// one source's rows, and that source's error under the refit.
struct loso_fold {
  std::string source;             ///< held out: a BLOOM measurement day, or the production log lines
  std::int64_t rows = 0;
  double tile_fraction = 0;       ///< A100 large-GEMM fraction of peak fitted on the other sources
  double host_ms = 0;             ///< DeepSpeed host time per layer pass fitted on the other sources, ms
  double median_abs_error = 0;    ///< of the held-out rows under the refit
  double shipped_median_abs_error = 0;  ///< the same rows with the shipped constants (fitted on all)
};

/// Leave-one-source-out for a default fitted on one published source (§5.6, compute.h published_fit):
/// with that source left out nothing constrains the constant, which falls back to its prior; the source's
/// rows are predicted so, beside their in-sample error at the shipped value.
struct published_fold {
  std::string constant;
  std::string source;
  double shipped_value = 0;   ///< fitted on the source
  double refit_value = 0;     ///< without it: the prior
  std::int64_t rows = 0;
  double median_abs_error = 0, max_abs_error = 0;                  ///< held out (at the prior)
  double shipped_median_abs_error = 0, shipped_max_abs_error = 0;  ///< in sample
};

/// Leave-one-source-out over the tables the A100 constants were fitted on (validate --loso), and over the
/// published source Blackwell's attention was fitted on.
struct loso_report {
  std::vector<loso_fold> folds;   ///< empty unless asked for
  std::vector<published_fold> published;
  double median_abs_error = 0;    ///< of every row, each predicted by the refit without its source
  double shipped_median_abs_error = 0;  ///< of the same rows with the shipped constants (in sample)
  double shipped_tile_fraction = 0, shipped_host_ms = 0;
  /// The grid searched: tile fractions and host times (ms), first, step, count.
  double tile_first = 0, tile_step = 0, host_first_ms = 0, host_step_ms = 0;
  std::int64_t tile_count = 0, host_count = 0;
};

struct validation_report {
  std::vector<validation_row> rows;
  loso_report loso;                      ///< leave-one-source-out, when asked for
  std::vector<validation_stats> tables;  ///< per file
  std::vector<validation_stats> groups;  ///< per seed table (rows measured together, one thing varied)
  /// Published rows per GPU generation and precision ("H100 BF16", ...): issue 9's targets are per generation.
  /// The rows of published-measurements-more.csv, which no constant was fitted on, count apart ("H100 BF16,
  /// held out").
  std::vector<validation_stats> generations;
  /// Published rows per source (the `source` column of both published tables): the error per source.
  std::vector<validation_stats> sources;
  /// Measured peak memory against predicted, per source and statistic (rows with a measured memory).
  std::vector<validation_stats> memory_sources;
  validation_stats overall;
};

/// The error a prediction carries (issue 28, docs/formulas.md §5.8): the |error| that 80% of the validated
/// runs of its kind stayed within, the runs it was read from, and which kind they were ("H100 FP8,
/// megatron"). runs = 0: no validated run of that GPU generation.
struct error_band {
  double p80_abs_error = 0;
  std::int64_t runs = 0;
  std::string scope;
};

/// The runs a band is read from: the job's GPU generation, precision and framework when at least this
/// many were validated, else its generation and precision, else its GPU generation alone.
inline constexpr std::int64_t kMinBandRuns = 5;

/// A job's GPU generation and precision as validation groups runs: "A100 BF16", "H100 FP8", "B200 FP8"
/// (the H800 and H200 are H100s to the compute model; "" for a GPU no published run used).
std::string generation_of_job(const job_spec& job);

/// The band of the predictions of `generation` ("H100 FP8") and `framework` over the rows of `r`.
error_band expected_error(const validation_report& r, const std::string& generation, const std::string& framework);

/// Spearman rank correlation (average ranks for ties).
double spearman(const std::vector<double>& a, const std::vector<double>& b);

/// The median of `v` (0 when empty).
double median_of(std::vector<double> v);

/// The statistics of `rows` (skipped rows left out): rows, median and max |error|, Spearman of predicted
/// against measured throughput with the predicted fastest row's shortfall, and how many were predicted not
/// to fit.
validation_stats stats_of(const std::string& name, const std::vector<const validation_row*>& rows);
/// The same over the rows' memory errors (rows with a measured and predicted peak memory).
validation_stats memory_stats_of(const std::string& name, const std::vector<const validation_row*>& rows);

}  // namespace trainplan
