// How the planner uses a calibration profile instead of its datasheet defaults (docs/formulas.md
// §6.4): the measured GEMMs become the compute model's correction table, the copy rate its memory
// bandwidth, the collective sweeps the links' efficiencies and latencies.
#pragma once

#include <cstdint>
#include <string_view>

#include "trainplan/core/hardware/calibration.h"
#include "trainplan/core/hardware/hardware.h"

namespace trainplan {

/// What applying a profile changed, for headers and tests.
struct calibration_effect {
  std::int64_t gemm_points = 0;            ///< measured GEMMs now used by the compute model
  double memory_bandwidth_fraction = 0;    ///< new fraction of the datasheet HBM bandwidth; 0 = unchanged
  double intra_node_efficiency = 0;        ///< new NVLink bus-bandwidth fraction; 0 = unchanged
  double intra_node_latency_s = 0;         ///< new per-step latency; 0 = unchanged
  double inter_node_efficiency = 0;
  double inter_node_latency_s = 0;
};

/// Replace the GPU's default compute efficiencies and the cluster's link efficiencies and latencies
/// with what the profile measured (§6.4). Throws input_error naming `origin` when the profile was
/// measured on another GPU than the cluster's.
calibration_effect apply_calibration(cluster_spec& cluster, const calibration_profile& profile,
                                     std::string_view origin);

/// The link efficiency and per-step latency that make the planner's flat ring price
/// t(S) = steps(n)·latency + S·bus_factor(n)/(peak·efficiency) fit a measured sweep best in relative
/// error (least squares on the points; §6.4). `peak_bytes_per_s` is the link's datasheet rate per GPU.
struct link_fit {
  double efficiency = 0;
  double latency_s = 0;
};
link_fit fit_link(const measured_collective& sweep, double peak_bytes_per_s);

}  // namespace trainplan
