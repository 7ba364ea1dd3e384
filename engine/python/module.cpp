// engine/python/module.cpp — pt2diff._pt2diff, the native half of the Python package (python/pt2diff):
// a thin client of include/pt2diff, like the CLI. Python tensors cross as at::Tensor without a copy
// (THPVariable_Unpack / THPVariable_Wrap: the same libtorch and libtorch_python as `import torch`); the
// options arrive as a dict with every key (python/pt2diff/__init__.py fills in the CLI's defaults); the
// results leave as handles whose reports come from the library's own functions (to_json(), to_text() ...).
//
// The only TU that sees Python, pybind11 and torch/csrc headers. Engine calls release the GIL and run
// one at a time (engine_mutex): see docs/python.md, "Threads and processes".
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/autograd/python_variable.h>

#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <memory>
#include <mutex>
#include <optional>

#include "engine/report/progress.h"
#include "engine/load/archive.h"
#include "graphs/memory_estimate.h"
#include "pt2diff/advanced/interpreter.h"
#include "pt2diff/option_table.h"
#include "pt2diff/pt2diff.h"

namespace py = pybind11;

namespace pt2diff::python {

namespace {

/// Engine calls from several Python threads run one after another (the GIL is released meanwhile, so
/// other Python threads go on): the engine makes no promise about concurrent runs in one process.
std::mutex engine_mutex;

/// Runs `f` without the GIL and with the engine to itself.
template <class F>
auto engine_call(F&& f) {
  py::gil_scoped_release no_gil;
  std::lock_guard<std::mutex> lock(engine_mutex);
  at::NoGradGuard no_grad;  // the engine's runs are never differentiated, whatever the caller's mode
  return f();
}

/// A loaded program, shared by the results made from it (the HTML report draws its graph).
struct ProgramHandle {
  std::shared_ptr<const Program> program;
  std::vector<std::string> libraries;  ///< load_library=: loaded before it, handed to the compiler's worker
};

struct DiffHandle {
  std::shared_ptr<const DiffResult> result;
  std::shared_ptr<const Program> program;
};

struct SweepHandle {
  std::shared_ptr<const SweepResult> result;
  std::shared_ptr<const Program> program;
};

struct SizesHandle {
  std::shared_ptr<const SizeSweepResult> result;
  std::shared_ptr<const Program> program;
};

struct RecheckHandle {
  std::shared_ptr<const RecheckResult> result;
  std::shared_ptr<const Program> program;
};

// --- inputs --------------------------------------------------------------------------------------

[[noreturn]] void bad_inputs(const std::string& what) { throw Error(Error::Kind::BadInputs, what); }

std::string type_name(py::handle h) { return py::str(py::type::handle_of(h).attr("__name__")).cast<std::string>(); }

/// A Python tensor as the engine's: the same storage, detached from autograd.
at::Tensor tensor(py::handle h) { return THPVariable_Unpack(h.ptr()).detach(); }

/// One graph input from Python: a tensor (shared, not copied), None, bool, int, float or str.
InputValue to_input_value(py::handle h, const std::string& where) {
  if (THPVariable_Check(h.ptr())) return tensor(h);
  if (h.is_none()) return std::monostate{};
  if (PyBool_Check(h.ptr())) return h.cast<bool>();
  if (PyLong_Check(h.ptr())) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
    if (overflow) bad_inputs(fmt::format("{} is an int that does not fit in 64 bits", where));
    return static_cast<int64_t>(v);
  }
  if (PyFloat_Check(h.ptr())) return PyFloat_AsDouble(h.ptr());
  if (PyUnicode_Check(h.ptr())) return h.cast<std::string>();
  if (py::isinstance<py::tuple>(h) || py::isinstance<py::list>(h) || py::isinstance<py::dict>(h))
    bad_inputs(fmt::format("{} is a {}: nested containers are not graph inputs; pass the graph's inputs flat (tensors, "
                           "numbers, str, None), as torch.export.export took them", where, type_name(h)));
  bad_inputs(fmt::format("{} is a {}: graph inputs are tensors, numbers, str or None", where, type_name(h)));
}

bool is_sequence(py::handle h) { return py::isinstance<py::tuple>(h) || py::isinstance<py::list>(h); }

std::vector<InputValue> positional(py::handle seq, const std::string& where) {
  std::vector<InputValue> out;
  size_t i = 0;
  for (py::handle item : seq) out.push_back(to_input_value(item, fmt::format("{}: input #{}", where, i++)));
  return out;
}

std::vector<std::pair<std::string, InputValue>> keyword(py::handle dict, const std::string& where) {
  std::vector<std::pair<std::string, InputValue>> out;
  for (auto [key, value] : py::reinterpret_borrow<py::dict>(dict)) {
    if (!PyUnicode_Check(key.ptr()))
      bad_inputs(fmt::format("{}: dict keys must be str (input names), got {}", where, type_name(key)));
    const std::string name = key.cast<std::string>();
    out.emplace_back(name, to_input_value(value, fmt::format("{}: input '{}'", where, name)));
  }
  return out;
}

/// The layouts load_inputs() reads from a file, from Python objects: a tensor, a tuple or list
/// (positional), a str-keyed dict (by name), or an (args, kwargs) pair.
UserInputs user_inputs(py::handle given, const std::string& origin) {
  UserInputs in;
  in.origin = origin;
  if (THPVariable_Check(given.ptr())) {
    in.args.push_back(tensor(given));
  } else if (py::isinstance<py::dict>(given)) {
    in.kwargs = keyword(given, origin);
  } else if (is_sequence(given)) {
    py::sequence items = py::reinterpret_borrow<py::sequence>(given);
    if (py::len(items) == 2 && is_sequence(items[0]) && py::isinstance<py::dict>(items[1])) {
      in.args = positional(items[0], origin);
      in.kwargs = keyword(items[1], origin);
    } else {
      in.args = positional(given, origin);
    }
  } else {
    bad_inputs(fmt::format("{} is a {}: pass a tensor, a tuple or list (positional), a dict (by name) or (args, kwargs)",
                           origin, type_name(given)));
  }
  return in;
}

/// What to feed the program: the given inputs, drawn ones, or the archive's sample inputs.
BoundInputs bind_given(const Program& program, py::handle given, bool random, uint64_t seed, int64_t max_memory, const std::string& origin) {
  if (random) {
    if (!given.is_none()) throw Error(Error::Kind::Usage, "pass either inputs or random_inputs=True, not both");
    check_memory(program.ir.graph, /*exploded=*/false, max_memory);
    return bind_inputs(program, random_inputs(program, seed));
  }
  if (!given.is_none()) return bind_inputs(program, user_inputs(given, origin));
  if (!program.sample_inputs)
    throw Error(Error::Kind::BadInputs,
                program.sample_inputs_problem.empty()
                    ? fmt::format("{} has no sample inputs: pass inputs or random_inputs=True", program.path)
                    : fmt::format("{}: its sample inputs are unusable ({}): pass inputs or random_inputs=True", program.path,
                                  program.sample_inputs_problem));
  return bind_inputs(program, *program.sample_inputs);
}

// --- options -------------------------------------------------------------------------------------

template <class T>
T get(const py::dict& o, const char* key) {
  return o[key].cast<T>();
}

[[noreturn]] void usage(const std::string& what) { throw Error(Error::Kind::Usage, what); }

/// A keyword's value as the option table holds it (pt2diff/option_table.h), from the Python object given.
OptionValue option_value(const OptionSpec& spec, const Program& program, py::handle v) {
  switch (spec.kind) {
    case OptionKind::Switch:
    case OptionKind::NegatedSwitch:
      return v.cast<bool>();
    case OptionKind::Text:
      if (v.is_none()) return spec.program_default ? OptionValue(default_device(program)) : spec.get(DiffOptions{});
      return v.cast<std::string>();
    case OptionKind::Real:
      return v.cast<double>();
    case OptionKind::Count:
      return v.cast<int64_t>();
    case OptionKind::Size: {  // None is 0 (the memory available), an int bytes, a string as the CLI reads it ("16G", "none")
      if (v.is_none()) return int64_t{0};
      if (PyLong_Check(v.ptr())) return v.cast<int64_t>();
      const std::string text = py::str(v).cast<std::string>();
      auto bytes = parse_byte_size(text);
      if (!bytes) usage(fmt::format("{}='{}' is not a size (16G, 512M, 1.5T, bytes) or 'none'", spec.keyword, text));
      return *bytes;
    }
    case OptionKind::Texts:
      return v.cast<std::vector<std::string>>();
  }
  return {};
}

int64_t max_memory_of(const Program& program, const py::dict& o) {
  return std::get<int64_t>(option_value(*find_option_keyword("max_memory"), program, o["max_memory"]));
}

/// The DiffOptions of a call: each keyword of the option table that `o` holds, checked as the table says
/// (the CLI's checks, in Python's spelling: "repeats=0: expected 1 to 100"); the device, when None, is
/// where the program was exported.
DiffOptions diff_options(const Program& program, const std::vector<std::string>& libraries, const py::dict& o) {
  DiffOptions d;
  d.backend.device = default_device(program);
  for (const OptionSpec& spec : option_table()) {
    if (!spec.keyword || !o.contains(spec.keyword)) continue;
    const OptionValue value = option_value(spec, program, o[spec.keyword]);
    if (std::string problem = option_problem(spec, value, spec.keyword); !problem.empty()) usage(problem);
    spec.set(d, value);
  }
  d.backend.op_libraries = libraries;
  return d;
}

/// The option table for the Python side's defaults and docs: (keyword, flag, commands, default, help) per
/// row that has a keyword, defaults as Python values (None for an unset text or size, a tuple for a list).
py::list option_rows() {
  py::list rows;
  const DiffOptions defaults;
  for (const OptionSpec& spec : option_table()) {
    if (!spec.keyword) continue;
    const OptionValue value = spec.get(defaults);
    py::object d = std::visit(
        [&](const auto& v) -> py::object {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::vector<std::string>>) return py::tuple(py::cast(v));
          else if constexpr (std::is_same_v<T, std::string>) return v.empty() || spec.program_default ? py::none() : py::cast(v);
          else if constexpr (std::is_same_v<T, int64_t>) return spec.kind == OptionKind::Size && v == 0 ? py::none() : py::cast(v);
          else return py::cast(v);
        },
        value);
    rows.append(py::make_tuple(spec.keyword, spec.flag, spec.commands, d, spec.help));
  }
  return rows;
}

/// The progress line on a terminal (as the CLI draws it) unless progress=False.
struct Progress {
  std::optional<TerminalProgress> line;
  explicit Progress(const py::dict& o) {
    if (get<bool>(o, "progress")) line.emplace();
  }
  void attach(BackendOptions& b) {
    if (line) b.on_wait = [this](const std::string& activity, double elapsed) { line->on_wait(activity, elapsed); };
  }
  void clear() {
    if (line) line->clear();
  }
};

BoundInputs bind_call(const ProgramHandle& p, py::handle inputs, const py::dict& o) {
  return bind_given(*p.program, inputs, get<bool>(o, "random_inputs"), get<uint64_t>(o, "seed"), max_memory_of(*p.program, o),
              get<std::string>(o, "inputs_origin"));
}

// --- results -------------------------------------------------------------------------------------

py::object wrap(const at::Tensor& t) {
  if (!t.defined()) return py::none();
  return py::reinterpret_steal<py::object>(THPVariable_Wrap(t));
}

py::list output_values(const DiffHandle& h) {
  py::list out;
  const DiffResult& r = *h.result;
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    const OutputValues* v = r.values && i < r.values->outputs.size() ? &r.values->outputs[i] : nullptr;
    out.append(py::make_tuple(r.outputs[i].name, v ? wrap(v->compiled) : py::none(), v ? wrap(v->eager) : py::none(),
                              v ? wrap(v->fp64) : py::none()));
  }
  return out;
}

// --- errors --------------------------------------------------------------------------------------

struct ErrorClasses {
  py::object base, usage, bad_archive, bad_inputs, unsupported, internal;
  py::object of(Error::Kind kind) const {
    switch (kind) {
      case Error::Kind::Usage: return usage;
      case Error::Kind::BadArchive: return bad_archive;
      case Error::Kind::BadInputs: return bad_inputs;
      case Error::Kind::Unsupported: return unsupported;
      case Error::Kind::Internal: return internal;
    }
    return internal;
  }
};

py::object make_error_class(py::module_& m, const char* name, py::handle base, const char* kind, int exit_code, const char* doc) {
  py::object cls = py::reinterpret_steal<py::object>(
      PyErr_NewExceptionWithDoc(fmt::format("pt2diff.{}", name).c_str(), doc, base.ptr(), nullptr));
  if (!cls) throw py::error_already_set();
  cls.attr("kind") = kind;
  cls.attr("exit_code") = exit_code;
  m.attr(name) = cls;
  return cls;
}

}  // namespace

}  // namespace pt2diff::python

PYBIND11_MODULE(_pt2diff, m) {
  // pt2diff/verdict.h's default, so Python's default is the engine's, changed in one place.
  m.attr("DEFAULT_SUSPICIOUS_RATIO") = pt2diff::kDefaultSuspiciousRatio;
  m.attr("DEFAULT_NODE_RATIO") = pt2diff::kDefaultNodeRatio;
  m.attr("DEFAULT_NODE_FAIL_RATIO") = pt2diff::kDefaultNodeFailRatio;
  m.attr("DIFF") = pt2diff::kDiffCommand;
  m.attr("EXPLAIN") = pt2diff::kExplainCommand;
  m.attr("SWEEP") = pt2diff::kSweepCommand;
  m.def("report_schema", &pt2diff::report_json_schema,
        "The JSON schema of the report (docs/report.schema.json), from the description the engine writes the report by.");
  m.def("options", &pt2diff::python::option_rows,
        "The option table (pt2diff/option_table.h): (keyword, flag, commands, default, help) per keyword, commands a mask of "
        "DIFF, EXPLAIN, SWEEP.");
  using namespace pt2diff;
  using namespace pt2diff::python;
  m.doc() = "pt2diff's engine (the native half of the pt2diff package: use `import pt2diff`)";

  // Kept until the process ends: destroying Python objects after the interpreter has gone would crash.
  static ErrorClasses& errors = *new ErrorClasses;
  errors.base = make_error_class(m, "Error", PyExc_Exception, "", 2,
                                 "pt2diff's error: str() is the one line the CLI prints after 'pt2diff: '. "
                                 "`kind` names the class of problem, `exit_code` is the CLI's (2, 3 for internal errors).");
  errors.usage = make_error_class(m, "UsageError", errors.base, "usage", 2, "bad options or arguments");
  errors.bad_archive = make_error_class(m, "BadArchiveError", errors.base, "bad_archive", 2,
                                        "the graph cannot be read as a torch.export archive");
  errors.bad_inputs = make_error_class(m, "BadInputsError", errors.base, "bad_inputs", 2,
                                       "inputs missing, unreadable or not matching the graph");
  errors.unsupported = make_error_class(m, "UnsupportedError", errors.base, "unsupported", 2,
                                        "a valid graph that pt2diff cannot handle (yet)");
  errors.internal = make_error_class(m, "InternalError", errors.base, "internal", 3, "a bug in pt2diff: please report it");
  py::register_local_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      PyErr_SetString(errors.of(e.kind()).ptr(), e.what());
    } catch (const c10::Error& e) {
      // As the CLI says it: libtorch's message, first line only.
      PyErr_SetString(errors.internal.ptr(), ("internal error (libtorch): " + first_line(e.what())).c_str());
    }
  });

  py::class_<ProgramHandle>(m, "Program", "A loaded torch.export program (pt2diff.load).")
      .def_property_readonly("path", [](const ProgramHandle& p) { return p.program->path; },
                             "the archive's path, or the name it was given when loaded from memory")
      .def_property_readonly("model_name", [](const ProgramHandle& p) { return p.program->model_name; })
      .def_property_readonly("export_device", [](const ProgramHandle& p) { return p.program->export_device.str(); },
                             "the device it was exported on ('cpu', 'cuda:0'): the compiler's default device")
      .def_property_readonly("in_memory", [](const ProgramHandle& p) { return p.program->archive_bytes != nullptr; },
                             "loaded from bytes: a compiler in another process gets a temporary copy")
      .def_property_readonly("node_count", [](const ProgramHandle& p) { return p.program->ir.graph.nodes().size(); })
      .def_property_readonly("weight_bytes", [](const ProgramHandle& p) { return p.program->weight_bytes(); })
      .def_property_readonly("has_sample_inputs", [](const ProgramHandle& p) { return p.program->sample_inputs.has_value(); })
      .def_property_readonly("libraries", [](const ProgramHandle& p) { return p.libraries; })
      .def("__repr__", [](const ProgramHandle& p) {
        return fmt::format("<pt2diff.Program {} ({} nodes)>", p.program->path, p.program->ir.graph.nodes().size());
      });

  m.def(
      "load",
      [](const std::string& path, const std::string& model, const std::vector<std::string>& libraries) {
        return engine_call([&] {
          for (const std::string& l : libraries) load_op_library(l);
          return ProgramHandle{std::make_shared<const Program>(load_program(path, LoadOptions{model})), libraries};
        });
      },
      py::arg("path"), py::arg("model") = "", py::arg("libraries") = std::vector<std::string>{},
      "Loads a torch.export archive from a path.");
  m.def(
      "load_bytes",
      [](py::bytes data, const std::string& name, const std::string& model, const std::vector<std::string>& libraries) {
        std::string bytes = data;  // one copy, made with the GIL held
        return engine_call([&] {
          for (const std::string& l : libraries) load_op_library(l);
          return ProgramHandle{std::make_shared<const Program>(load_program_from_memory(std::move(bytes), name, LoadOptions{model})),
                               libraries};
        });
      },
      py::arg("data"), py::arg("name"), py::arg("model") = "", py::arg("libraries") = std::vector<std::string>{},
      "Loads a torch.export archive from its bytes (what torch.export.save writes to a BytesIO).");

  py::class_<DiffHandle>(m, "DiffResult", "A diff's result (the native handle behind pt2diff.DiffResult).")
      .def("to_json", [](const DiffHandle& h) { return to_json(*h.result); })
      .def("to_text", [](const DiffHandle& h) { return to_text(*h.result); })
      .def("to_summary", [](const DiffHandle& h) { return to_summary(*h.result); })
      .def("to_failure_message", [](const DiffHandle& h) { return to_failure_message(*h.result); })
      .def(
          "to_html",
          [](const DiffHandle& h, const std::string& command) {
            return to_html(*h.result, {h.program.get(), command, ""});
          },
          py::arg("command") = "")
      .def_property_readonly("diverged", [](const DiffHandle& h) { return h.result->diverged; })
      .def_property_readonly("compiled_failed", [](const DiffHandle& h) { return h.result->compiled_failed; })
      .def("output_values", &output_values);

  py::class_<SweepHandle>(m, "SweepResult", "A sweep's result (the native handle behind pt2diff.SweepResult).")
      .def("to_json", [](const SweepHandle& h) { return sweep_to_json(*h.result); })
      .def("to_text", [](const SweepHandle& h) { return sweep_to_text(*h.result); })
      .def("to_csv", [](const SweepHandle& h) { return sweep_to_csv(*h.result); })
      .def("to_svg", [](const SweepHandle& h) { return sweep_to_svg(*h.result); })
      .def_property_readonly("run", [](const SweepHandle& h) {
        return DiffHandle{std::shared_ptr<const DiffResult>(h.result, &h.result->run), h.program};
      });

  m.def(
      "diff",
      [](const ProgramHandle& p, py::object inputs, const py::dict& o) {
        BoundInputs bound = bind_call(p, inputs, o);
        DiffOptions options = diff_options(*p.program, p.libraries, o);
        Progress progress(o);
        progress.attach(options.backend);
        auto result = engine_call([&] { return std::make_shared<const DiffResult>(diff(*p.program, bound, options)); });
        progress.clear();
        return DiffHandle{result, p.program};
      },
      py::arg("program"), py::arg("inputs"), py::arg("options"));
  m.def(
      "explain",
      [](const ProgramHandle& p, py::object inputs, const std::string& node, const std::string& last, const py::dict& o) {
        BoundInputs bound = bind_call(p, inputs, o);
        DiffOptions options = diff_options(*p.program, p.libraries, o);
        Progress progress(o);
        progress.attach(options.backend);
        std::vector<Hint> hints = engine_call([&] { return explain(*p.program, bound, node, options, last); });
        progress.clear();
        return py::make_tuple(hints_to_json(hints), hints_to_text(hints));
      },
      py::arg("program"), py::arg("inputs"), py::arg("node"), py::arg("last"), py::arg("options"));
  m.def(
      "sweep",
      [](const ProgramHandle& p, py::object inputs, const std::string& tols, const std::vector<double>& multipliers, bool localize,
         const py::dict& o) {
        BoundInputs bound = bind_call(p, inputs, o);
        SweepOptions options;
        options.diff = diff_options(*p.program, p.libraries, o);
        options.tols = parse_tolerances(tols);
        options.multipliers = multipliers;
        options.localize = localize;
        Progress progress(o);
        progress.attach(options.diff.backend);
        auto result = engine_call([&] { return std::make_shared<const SweepResult>(sweep(*p.program, bound, options)); });
        progress.clear();
        return SweepHandle{result, p.program};
      },
      py::arg("program"), py::arg("inputs"), py::arg("tols"), py::arg("multipliers"), py::arg("localize"), py::arg("options"));
  py::class_<SizesHandle>(m, "SizeSweepResult", "A size sweep's result (the native handle behind pt2diff.SizeSweepResult).")
      .def("to_json", [](const SizesHandle& h) { return sizes_to_json(*h.result); })
      .def("to_text", [](const SizesHandle& h) { return sizes_to_text(*h.result); })
      .def("to_csv", [](const SizesHandle& h) { return sizes_to_csv(*h.result); })
      .def("to_html", [](const SizesHandle& h) { return sizes_to_html(*h.result); });
  m.def(
      "sweep_sizes",
      [](const ProgramHandle& p, py::object inputs, const std::vector<std::string>& dims, bool static_check, const py::dict& o) {
        BoundInputs bound = bind_call(p, inputs, o);
        SizeSweepOptions options;
        options.diff = diff_options(*p.program, p.libraries, o);
        for (const std::string& d : dims) options.dims.push_back(parse_size_dim(d));
        options.static_check = static_check;
        Progress progress(o);
        progress.attach(options.diff.backend);
        auto result = engine_call([&] { return std::make_shared<const SizeSweepResult>(sweep_sizes(*p.program, bound, options)); });
        progress.clear();
        return SizesHandle{result, p.program};
      },
      py::arg("program"), py::arg("inputs"), py::arg("dims"), py::arg("static_check"), py::arg("options"));
  py::class_<RecheckHandle>(m, "RecheckResult", "A recheck's result (the native handle behind pt2diff.RecheckResult).")
      .def("to_json", [](const RecheckHandle& h) { return recheck_to_json({*h.result}); })
      .def("to_text", [](const RecheckHandle& h) { return recheck_to_text(*h.result); });
  m.def(
      "recheck",
      [](const ProgramHandle& p, py::object inputs, const std::vector<std::string>& torches, bool bisect, bool any_version,
         double change_factor, const py::dict& o) {
        BoundInputs bound = bind_call(p, inputs, o);
        RecheckOptions options;
        options.diff = diff_options(*p.program, p.libraries, o);
        for (const std::string& t : torches) options.torches.push_back(parse_torch_install(t));
        options.bisect = bisect;
        options.any_version = any_version;
        options.change_factor = change_factor;
        Progress progress(o);
        progress.attach(options.diff.backend);
        auto result = engine_call([&] { return std::make_shared<const RecheckResult>(recheck(*p.program, bound, options)); });
        progress.clear();
        return RecheckHandle{result, p.program};
      },
      py::arg("program"), py::arg("inputs"), py::arg("torches"), py::arg("bisect"), py::arg("any_version"), py::arg("change_factor"),
      py::arg("options"));
  m.def(
      "diff_distributed",
      [](const ProgramHandle& p, const std::string& dir, const std::vector<int>& graphs, bool rank_local,
         const std::string& process_backend, double collective_timeout, const py::dict& o) {
        DistOptions options;
        options.diff = diff_options(*p.program, p.libraries, o);
        options.graphs = graphs;
        options.rank_local = rank_local;
        options.process_backend = process_backend;
        options.collective_timeout_seconds = collective_timeout;
        Progress progress(o);
        progress.attach(options.diff.backend);
        DistResult result = engine_call([&] { return diff_distributed(dir, options); });
        progress.clear();
        return py::make_tuple(to_json(result), to_text(result));
      },
      py::arg("program"), py::arg("dir"), py::arg("graphs"), py::arg("rank_local"), py::arg("process_backend"),
      py::arg("collective_timeout"), py::arg("options"));
  m.def(
      "cli_flags",
      [](const ProgramHandle& p, const py::dict& o) {
        return to_flags(diff_options(*p.program, p.libraries, o), default_device(*p.program));
      },
      py::arg("program"), py::arg("options"),
      "The flags of `pt2diff GRAPH INPUTS` that run the CLI with these options (pt2diff/options.h: to_flags).");
}
