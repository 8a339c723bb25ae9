// The Python module's native part, trainplan._trainplan: the CLI's parsers and each command's output
// (include/trainplan/cli/cli.h) as JSON strings, which trainplan/__init__.py turns into dicts. It computes
// nothing of its own: the same functions serialize the same result structs for `--json`.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "trainplan/cli/args.h"
#include "trainplan/cli/cli.h"
#include "trainplan/core/base/error.h"
#include "trainplan/report/report.h"

namespace py = pybind11;
using namespace trainplan;

namespace {

const reporter& json_reporter() {
  static const std::unique_ptr<reporter> r = make_reporter(output_format::json);
  return *r;
}

/// Job flags as the CLI's commands read them: none given is BLOOM-176B's production layout.
parsed_job parse_job_or_default(const std::vector<std::string>& args) {
  return parse_job_args(args.empty() ? std::vector<std::string>{"--preset", "bloom-176b-production"} : args);
}

py::list flags_of(const std::string& command) {
  py::list out;
  for (const command_flag& f : command_flags(command)) {
    py::dict d;
    d["name"] = f.name;
    d["aliases"] = f.aliases;
    d["value_name"] = f.value_name;
    d["kind"] = std::string(to_string(f.kind));
    d["default"] = f.default_value;
    d["help"] = f.help;
    out.append(d);
  }
  return out;
}

}  // namespace

PYBIND11_MODULE(_trainplan, m) {
  m.doc() = "trainplan's C++ core: each function returns the CLI's --json output as a string";
  // Bad input (the CLI's exit status 2); trainplan/__init__.py re-raises it as trainplan.Error with the
  // flags in the message named by the caller's keyword arguments.
  static py::exception<input_error> input_exc(m, "InputError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const input_error& e) {
      input_exc(cli_message(e).c_str());
    }
  });

  py::class_<parsed_job>(m, "ParsedJob", "a validated job (parse_job)")
      .def("model", [](const parsed_job& pj) { return model_output(pj, json_reporter()); })
      .def("memory", [](const parsed_job& pj) { return memory_output(pj, json_reporter()); })
      .def("comm", [](const parsed_job& pj) { return comm_output(pj, json_reporter()); })
      .def("time", [](const parsed_job& pj) { return time_output(pj, json_reporter()); })
      .def("schedule", [](const parsed_job& pj, bool gpipe) { return schedule_output(pj, gpipe, json_reporter()); },
           py::arg("gpipe") = false);

  m.def("parse_job", &parse_job_or_default, py::arg("args"), "job flags → ParsedJob (raises InputError)");
  m.def(
      "search",
      [](const std::vector<std::string>& args) {
        const search_request req = parse_search_request(args);
        if (req.explain_row > 0 || req.csv) throw input_error("--explain and --csv are command-line outputs");
        py::gil_scoped_release release;  // the search runs on every core; other Python threads go on
        return search_output(req, json_reporter());
      },
      py::arg("args"));
  m.def(
      "shapes",
      [](const std::vector<std::string>& args) {
        const shapes_request req = parse_shapes_request(args);
        py::gil_scoped_release release;
        return shapes_output(req, json_reporter());
      },
      py::arg("args"));
  m.def(
      "plan", [](const std::vector<std::string>& args) { return plan_output(parse_plan_request(args), json_reporter()); },
      py::arg("args"));
  m.def(
      "validate",
      [](const std::string& csv_path, bool loso) { return validation_output(csv_path, json_reporter(), loso); },
      py::arg("csv_path") = std::string(), py::arg("loso") = false);
  m.def("models", [] { return json_reporter().models(); });
  m.def("gpus", [] { return json_reporter().gpus(); });
  m.def("clusters", [] { return json_reporter().clusters(); });
  m.def("flags", &flags_of, py::arg("command"), "the flags of 'job', 'search', 'shapes' or 'plan', as dicts");
  m.def(
      "did_you_mean",
      [](const std::string& name, const std::vector<std::string>& candidates) { return did_you_mean(name, candidates); },
      py::arg("name"), py::arg("candidates"));
  m.def(
      "classify_flag",
      [](const std::string& flag) {
        static constexpr const char* kNames[] = {"modelled", "ignored", "refused", "unknown"};
        return std::string(kNames[static_cast<int>(classify_flag(flag))]);
      },
      py::arg("flag"), "how the CLI treats a job flag: 'modelled', 'ignored', 'refused' or 'unknown'");
  m.def(
      "flag_classes",
      [] {
        const flag_classes& c = megatron_flag_classes();
        py::dict d;
        d["ignored"] = c.ignored;
        py::list at_value;
        for (const auto& f : c.ignored_at_value) {
          py::dict row;
          row["flag"] = f.flag;
          row["harmless_value"] = f.harmless_value;
          row["would_change"] = f.would_change;
          at_value.append(row);
        }
        d["ignored_at_value"] = at_value;
        d["tp_comm_tuning"] = c.tp_comm_tuning;
        py::list refused;
        for (const auto& g : c.refused) {
          py::dict row;
          row["would_change"] = g.would_change;
          row["flags"] = g.flags;
          refused.append(row);
        }
        d["refused"] = refused;
        return d;
      },
      "the Megatron flags that are not modelled: ignored, ignored at one value, TP-overlap tuning, refused by "
      "what they would change");
  m.def("version", [] { return std::string(tool_version()); });
  m.attr("schema_version") = kSchemaVersion;
}
