// Launch lines as their launchers read them (src/cli/launcher.h; docs/guide/describing-a-job.md "Launch
// lines"). The launchers' own defaults: torchrun (torch/distributed/run.py, get_args_parser) 1 node and
// 1 process per node; deepspeed (deepspeed/launcher/runner.py, parse_args and fetch_hostfile) every host
// of the hostfile (/job/hostfile, else the local node) and every GPU of each; srun one task per node;
// mpirun (Open MPI) -np processes, -N (--npernode, --map-by ppr:N:node) per node.
#include "launcher.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <sstream>
#include <string_view>

#include "args_detail.h"
#include "launch_env.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/base/input_file.h"

namespace trainplan::args_detail {

namespace {

enum class launcher_kind { none, torchrun, deepspeed, srun, mpirun };

/// What a launcher flag says.
enum class launcher_role {
  nodes,     ///< node count (torchrun MIN:MAX and srun MIN-MAX take the largest)
  per_node,  ///< processes per node
  total,     ///< processes in all
  hostfile,  ///< deepspeed: the hosts and their slots
  include,   ///< deepspeed: host:gpu,gpu@host:gpu,…
  exclude,   ///< deepspeed: what the hostfile leaves, unknown without it
  map_by,    ///< mpirun --map-by ppr:N:node
  one_node,  ///< torchrun --standalone (a switch)
  flag_switch,  ///< a launcher switch that takes no value and changes no estimate
};

struct launcher_flag {
  launcher_kind kind;
  std::string_view spelling;  ///< long flags with dashes (underscores are read as dashes); short ones as typed
  launcher_role role;
};

/// The launchers' flags that size the world, and their switches; every other launcher flag changes no
/// estimate (addresses, ports, rendezvous, accounts, bindings) and is listed as ignored.
constexpr std::array kLauncherFlags = {
    launcher_flag{launcher_kind::torchrun, "--nproc-per-node", launcher_role::per_node},
    launcher_flag{launcher_kind::torchrun, "--nnodes", launcher_role::nodes},
    launcher_flag{launcher_kind::torchrun, "--standalone", launcher_role::one_node},
    launcher_flag{launcher_kind::torchrun, "--no-python", launcher_role::flag_switch},
    launcher_flag{launcher_kind::torchrun, "--use-env", launcher_role::flag_switch},
    launcher_flag{launcher_kind::torchrun, "--module", launcher_role::flag_switch},
    launcher_flag{launcher_kind::torchrun, "-m", launcher_role::flag_switch},
    launcher_flag{launcher_kind::deepspeed, "--num-gpus", launcher_role::per_node},
    launcher_flag{launcher_kind::deepspeed, "--num-nodes", launcher_role::nodes},
    launcher_flag{launcher_kind::deepspeed, "--hostfile", launcher_role::hostfile},
    launcher_flag{launcher_kind::deepspeed, "-H", launcher_role::hostfile},
    launcher_flag{launcher_kind::deepspeed, "--include", launcher_role::include},
    launcher_flag{launcher_kind::deepspeed, "-i", launcher_role::include},
    launcher_flag{launcher_kind::deepspeed, "--exclude", launcher_role::exclude},
    launcher_flag{launcher_kind::deepspeed, "-e", launcher_role::exclude},
    launcher_flag{launcher_kind::deepspeed, "--no-python", launcher_role::flag_switch},
    launcher_flag{launcher_kind::deepspeed, "--no-local-rank", launcher_role::flag_switch},
    launcher_flag{launcher_kind::deepspeed, "--force-multi", launcher_role::flag_switch},
    launcher_flag{launcher_kind::deepspeed, "--autotuning", launcher_role::flag_switch},
    launcher_flag{launcher_kind::deepspeed, "--enable-each-rank-log", launcher_role::flag_switch},
    launcher_flag{launcher_kind::srun, "-N", launcher_role::nodes},
    launcher_flag{launcher_kind::srun, "--nodes", launcher_role::nodes},
    launcher_flag{launcher_kind::srun, "--ntasks-per-node", launcher_role::per_node},
    launcher_flag{launcher_kind::srun, "-n", launcher_role::total},
    launcher_flag{launcher_kind::srun, "--ntasks", launcher_role::total},
    launcher_flag{launcher_kind::srun, "--exclusive", launcher_role::flag_switch},
    launcher_flag{launcher_kind::srun, "-l", launcher_role::flag_switch},
    launcher_flag{launcher_kind::srun, "--label", launcher_role::flag_switch},
    launcher_flag{launcher_kind::srun, "-u", launcher_role::flag_switch},
    launcher_flag{launcher_kind::srun, "--unbuffered", launcher_role::flag_switch},
    launcher_flag{launcher_kind::srun, "--overlap", launcher_role::flag_switch},
    launcher_flag{launcher_kind::mpirun, "-np", launcher_role::total},
    launcher_flag{launcher_kind::mpirun, "--np", launcher_role::total},
    launcher_flag{launcher_kind::mpirun, "-n", launcher_role::total},
    launcher_flag{launcher_kind::mpirun, "-c", launcher_role::total},
    launcher_flag{launcher_kind::mpirun, "-N", launcher_role::per_node},
    launcher_flag{launcher_kind::mpirun, "-npernode", launcher_role::per_node},
    launcher_flag{launcher_kind::mpirun, "--npernode", launcher_role::per_node},
    launcher_flag{launcher_kind::mpirun, "--map-by", launcher_role::map_by},
    launcher_flag{launcher_kind::mpirun, "--allow-run-as-root", launcher_role::flag_switch},
    launcher_flag{launcher_kind::mpirun, "--oversubscribe", launcher_role::flag_switch},
    launcher_flag{launcher_kind::mpirun, "--tag-output", launcher_role::flag_switch},
    launcher_flag{launcher_kind::mpirun, "--report-bindings", launcher_role::flag_switch},
};

/// The launcher a token starts, if it is one (by its file name: /usr/bin/torchrun is torchrun).
launcher_kind launcher_of(const std::string& token) {
  const std::string base = std::filesystem::path(token).filename().string();
  if (base == "torchrun" || base == "torch.distributed.run" || base == "torch.distributed.launch") {
    return launcher_kind::torchrun;
  }
  if (base == "deepspeed") return launcher_kind::deepspeed;
  if (base == "srun") return launcher_kind::srun;
  if (base == "mpirun" || base == "mpiexec") return launcher_kind::mpirun;
  return launcher_kind::none;
}

bool is_python(const std::string& token) {
  const std::string base = std::filesystem::path(token).filename().string();
  return base == "python" || base.starts_with("python3");
}

bool is_script(const std::string& s) { return s.ends_with(".py"); }

std::string_view name_of(launcher_kind k) {
  switch (k) {
    case launcher_kind::torchrun: return "torchrun";
    case launcher_kind::deepspeed: return "deepspeed";
    case launcher_kind::srun: return "srun";
    case launcher_kind::mpirun: return "mpirun";
    case launcher_kind::none: break;
  }
  return "the launcher";
}

/// Long flags with underscores read as dashes (--nproc_per_node); short flags as typed (-N ≠ -n).
std::string spelling_of(const std::string& flag) {
  if (!flag.starts_with("--")) return flag;
  std::string s = flag;
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

const launcher_flag* find_launcher_flag(launcher_kind k, const std::string& spelling) {
  for (const launcher_flag& f : kLauncherFlags) {
    if (f.kind == k && f.spelling == spelling) return &f;
  }
  return nullptr;
}

/// A count: an integer ≥ 1; torchrun's MIN:MAX and srun's MIN-MAX give the largest.
std::int64_t count_of(const std::string& value, const std::string& flag) {
  std::string v = value;
  if (const auto sep = v.find_first_of(":-", 1); sep != std::string::npos) v = v.substr(sep + 1);
  return to_int_min(v, "launch line " + flag, 1);
}

/// One launcher's explicit values.
struct launcher_values {
  launcher_kind kind = launcher_kind::none;
  std::optional<std::int64_t> nodes, per_node, total;
  bool every_gpu = false;  ///< per node: every GPU of the node (torchrun gpu/auto, deepspeed's default)
  std::string nodes_flag, per_node_flag, total_flag;
  std::string hostfile;
  bool hostfile_given = false;
  bool unread_hostfile = false;  ///< given, not readable here: every GPU of a node assumed
  std::string unknown;
};

launcher_values values_of(launcher_kind k) {
  launcher_values v;
  v.kind = k;
  return v;
}

/// deepspeed's hostfile ("host slots=N" per line, # comments): its hosts and their slots (runner.py,
/// _parse_hostfile). Every host must have the same slots: a plan takes one GPU count per node.
void read_hostfile(launcher_values& v) {
  std::string text;
  try {
    text = read_input_file(v.hostfile, "hostfile", kMaxConfigFileBytes);
  } catch (const input_error& e) {
    // The default /job/hostfile absent: the local node. A hostfile given but not readable here (it lives
    // on the cluster): the nodes --num_nodes gives, with every GPU of each, else not known.
    if (v.hostfile_given && !v.nodes) v.unknown = "its hostfile " + v.hostfile + " cannot be read (" + e.what() + ")";
    if (v.hostfile_given && v.nodes) v.unread_hostfile = true;
    return;
  }
  std::istringstream in(text);
  std::string line;
  std::int64_t hosts = 0, slots = 0, line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string host, slot_word;
    if (!(words >> host)) continue;
    if (!(words >> slot_word) || !slot_word.starts_with("slots=")) {
      throw input_error(v.hostfile + ":" + std::to_string(line_no) + ": a hostfile line is 'HOST slots=N', got '" +
                        line + "'");
    }
    const std::int64_t n = to_int_min(slot_word.substr(6), v.hostfile + ":" + std::to_string(line_no) + ": slots", 1);
    if (slots != 0 && n != slots) {
      throw input_error(v.hostfile + ":" + std::to_string(line_no) + ": hosts with " + std::to_string(slots) + " and " +
                        std::to_string(n) + " slots: a plan takes one GPU count per node (give --num_gpus)");
    }
    slots = n;
    ++hosts;
  }
  if (hosts == 0) {
    v.unknown = "its hostfile " + v.hostfile + " lists no host";
    return;
  }
  if (!v.nodes) {
    v.nodes = hosts;
    v.nodes_flag = "--hostfile";
  }
  if (!v.per_node) {
    v.per_node = slots;
    v.per_node_flag = "--hostfile";
  }
}

/// deepspeed --include host:gpu,gpu@host:gpu (runner.py, parse_inclusion_exclusion): nodes and GPUs.
void read_include(launcher_values& v, const std::string& value, const std::string& flag) {
  if (value.empty()) throw input_error("launch line " + flag + ": no host given (host:gpu,gpu@host:gpu)");
  std::int64_t hosts = 0, gpus = 0;
  std::string_view rest = value;
  while (!rest.empty()) {
    const std::size_t at = std::min(rest.find('@'), rest.size());
    const std::string_view host = rest.substr(0, at);
    rest = at < rest.size() ? rest.substr(at + 1) : std::string_view{};
    if (host.empty()) throw input_error("launch line " + flag + " " + value + ": an empty host between '@'s");
    const std::size_t colon = host.find(':');
    if (colon == std::string_view::npos) {
      v.unknown = "its " + flag + " names host " + std::string(host) + " without its GPUs (they come from the hostfile)";
      return;
    }
    const std::int64_t n = 1 + std::count(host.begin() + static_cast<std::ptrdiff_t>(colon), host.end(), ',');
    if (gpus != 0 && n != gpus) {
      throw input_error("launch line " + flag + " " + value +
                        ": hosts with different GPU counts; a plan takes one GPU count per node");
    }
    gpus = n;
    ++hosts;
  }
  v.nodes = hosts;
  v.per_node = gpus;
  v.nodes_flag = v.per_node_flag = flag;
}

/// Applies one launcher flag.
void apply(launcher_values& v, const launcher_flag& f, const std::string& flag, const std::string& value) {
  switch (f.role) {
    case launcher_role::nodes:
      v.nodes = count_of(value, flag);
      v.nodes_flag = flag;
      break;
    case launcher_role::per_node:
      if (v.kind == launcher_kind::torchrun && (value == "gpu" || value == "auto")) {
        v.every_gpu = true;
        v.per_node.reset();
      } else {
        if (v.kind == launcher_kind::torchrun && value == "cpu") {
          throw input_error("launch line " + flag + " cpu: a CPU-only job; trainplan plans GPU training");
        }
        v.per_node = to_int_min(value, "launch line " + flag, 1);  // 0 is not "not given": it is refused
      }
      v.per_node_flag = flag;
      break;
    case launcher_role::total:
      v.total = to_int_min(value, "launch line " + flag, 1);
      v.total_flag = flag;
      break;
    case launcher_role::hostfile:
      v.hostfile = value;
      v.hostfile_given = true;
      break;
    case launcher_role::include: read_include(v, value, flag); break;
    case launcher_role::exclude: v.unknown = "its " + flag + " leaves GPUs of the hostfile that trainplan does not read"; break;
    case launcher_role::map_by:
      if (value.starts_with("ppr:") && value.ends_with(":node")) {
        v.per_node = to_int_min(value.substr(4, value.size() - 4 - 5), "launch line " + flag + " ppr:N:node", 1);
        v.per_node_flag = flag;
      }
      break;
    case launcher_role::one_node:
      v.nodes = 1;
      v.nodes_flag = flag;
      break;
    case launcher_role::flag_switch: break;
  }
}

/// The launcher's defaults for what it was not told.
void complete(launcher_values& v) {
  switch (v.kind) {
    case launcher_kind::torchrun:
      if (!v.per_node && !v.every_gpu) v.per_node = 1;
      break;
    case launcher_kind::deepspeed:
      if (v.hostfile.empty()) v.hostfile = "/job/hostfile";  // runner.py's DLTS_HOSTFILE
      if (v.unknown.empty() && (!v.nodes || !v.per_node)) read_hostfile(v);
      if (!v.per_node) v.every_gpu = true;
      break;
    case launcher_kind::srun:
      if (v.nodes && v.total && !v.per_node) {
        if (*v.total % *v.nodes != 0) {
          throw input_error("launch line " + v.total_flag + " " + std::to_string(*v.total) + " tasks over " +
                            v.nodes_flag + " " + std::to_string(*v.nodes) + " nodes: not the same on every node");
        }
        v.per_node = *v.total / *v.nodes;
        v.per_node_flag = v.total_flag;
        v.total.reset();
      } else if (v.nodes && !v.per_node) {
        v.per_node = 1;  // one task per node
      }
      break;
    case launcher_kind::mpirun:
      if (v.total && v.per_node) {
        if (*v.total % *v.per_node != 0) {
          throw input_error("launch line " + v.total_flag + " " + std::to_string(*v.total) + " processes at " +
                            v.per_node_flag + " " + std::to_string(*v.per_node) + " per node: not whole nodes");
        }
        v.nodes = *v.total / *v.per_node;
        v.nodes_flag = v.total_flag;
        v.total.reset();
      } else if (!v.total && !v.per_node) {
        v.unknown = "mpirun without -np starts a process per slot of its hosts";
      }
      break;
    case launcher_kind::none: break;
  }
}

}  // namespace

launch_world read_launcher(const std::vector<std::string>& tokens) {
  launch_world w;
  std::vector<launcher_values> launchers;
  std::size_t i = 0;
  for (; i < tokens.size() && !is_script(tokens[i]); ++i) {
    const std::string& tok = tokens[i];
    if (const launcher_kind k = launcher_of(tok); k != launcher_kind::none) {
      launchers.push_back(values_of(k));
      continue;
    }
    if (is_python(tok) || tok == "-u") continue;
    // The environment the line sets for what it runs: `NAME=VALUE …` and `env [-i] [-u NAME] NAME=VALUE …`.
    if (is_env_assignment(tok)) {
      read_env_assignment(tok, w.ignored, w.attention);
      continue;
    }
    if (tok == "env") {
      while (i + 1 < tokens.size() && (tokens[i + 1] == "-i" || tokens[i + 1] == "--ignore-environment" ||
                                       tokens[i + 1] == "-u" || tokens[i + 1].starts_with("--unset="))) {
        if (tokens[++i] == "-u" && i + 1 < tokens.size()) ++i;
      }
      continue;
    }
    if (tok == "-m" && i + 1 < tokens.size() && launcher_of(tokens[i + 1]) != launcher_kind::none) continue;
    // torchrun -m / python -m MODULE: the module is the training script (torchtitan's run_train.sh).
    if ((tok == "-m" || tok == "--module") && i + 1 < tokens.size() && !tokens[i + 1].starts_with("-")) {
      w.module = tokens[++i];
      break;
    }
    if (!tok.starts_with("-")) {
      throw input_error("launch line: expected a launcher flag or the training script, got '" + tok + "'");
    }
    std::string flag = tok, value;
    bool has_value = false;
    if (const auto eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_value = true;
    }
    const launcher_kind k = launchers.empty() ? launcher_kind::torchrun : launchers.back().kind;
    const std::string spelling = spelling_of(flag);
    const launcher_flag* f = find_launcher_flag(k, spelling);
    const bool takes_value = f == nullptr || (f->role != launcher_role::one_node && f->role != launcher_role::flag_switch);
    if (!has_value && takes_value && i + 1 < tokens.size()) {
      const std::string& next = tokens[i + 1];
      const bool next_is_value = !next.starts_with("-") && !is_script(next) && !is_python(next) &&
                                 launcher_of(next) == launcher_kind::none;
      if (next_is_value || f != nullptr) {
        value = next;
        has_value = true;
        ++i;
      }
    }
    if (f == nullptr) {
      w.ignored.push_back(spelling);
      continue;
    }
    if (takes_value && !has_value) {
      throw input_error("launch line " + flag + " needs a value (" + std::string(name_of(k)) + ")");
    }
    if (launchers.empty()) launchers.push_back(values_of(k));
    apply(launchers.back(), *f, spelling, value);
  }
  if (i == tokens.size()) {
    throw input_error("launch line: no training script (a *.py file, or -m MODULE) after '--'");
  }
  if (w.module.empty()) w.script = tokens[i];
  w.script_args.assign(tokens.begin() + static_cast<std::ptrdiff_t>(i) + 1, tokens.end());
  // Nested launchers (srun … torchrun …): the inner one's processes are the GPUs; what it does not say,
  // the outer one does (srun's nodes under a torchrun that gives no --nnodes).
  for (launcher_values& v : launchers) complete(v);
  for (const launcher_values& v : launchers) {
    if (v.nodes) {
      w.nodes = v.nodes;
      w.nodes_flag = v.nodes_flag;
    }
    if (v.per_node || v.every_gpu) {
      w.per_node = v.per_node;
      w.per_node_flag = v.per_node_flag;
    }
    if (v.total) {
      w.total = v.total;
      w.total_flag = v.total_flag;
    }
    if (!v.unknown.empty()) w.unknown = std::string(name_of(v.kind)) + ": " + v.unknown;
    if (v.unread_hostfile && !v.per_node) {
      w.ignored.push_back("--hostfile " + v.hostfile + " (not readable here: every GPU of a node assumed)");
    }
  }
  // Every launcher's default is the node it runs on.
  if (!w.nodes && !w.total && w.unknown.empty()) w.nodes = 1;
  if (w.total && w.nodes) {
    throw input_error("launch line " + w.total_flag + " " + std::to_string(*w.total) + " and " + w.nodes_flag + " " +
                      std::to_string(*w.nodes) + ": give the processes per node instead of in all");
  }
  return w;
}

}  // namespace trainplan::args_detail
