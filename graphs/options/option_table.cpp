// graphs/options/option_table.cpp — the rows of pt2diff/option_table.h: every option of a diff run, once.
// A row names the DiffOptions field it reads and writes; its default is DiffOptions{}'s value of that
// field, so no default is written twice. The order is the order to_flags() writes the flags in.
#include "pt2diff/option_table.h"

#include <cmath>
#include <fmt/format.h>

#include "graphs/rules/rule_registry.h"
#include "graphs/memory_estimate.h"
#include "pt2diff/error.h"
#include "pt2diff/verdict.h"

namespace pt2diff {

namespace {

constexpr unsigned kAll = kDiffCommand | kExplainCommand | kSweepCommand;
constexpr unsigned kAllAndInspect = kAll | kInspectCommand;  // loading the archive and drawing inputs
constexpr unsigned kDiffSweep = kDiffCommand | kSweepCommand;

// Accessors for the kinds of field the options have.
template <class Field>
OptionSpec field(OptionSpec spec, Field field_of, const char* example) {
  spec.example = example;
  using T = std::remove_cvref_t<decltype(field_of(std::declval<DiffOptions&>()))>;
  spec.get = [field_of](const DiffOptions& o) -> OptionValue {
    const T& v = field_of(const_cast<DiffOptions&>(o));
    if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, double> || std::is_same_v<T, std::string> ||
                  std::is_same_v<T, std::vector<std::string>>)
      return v;
    else
      return static_cast<int64_t>(v);  // counts and sizes
  };
  spec.set = [field_of](DiffOptions& o, const OptionValue& value) {
    T& v = field_of(o);
    if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, double> || std::is_same_v<T, std::string> ||
                  std::is_same_v<T, std::vector<std::string>>)
      v = std::get<T>(value);
    else
      v = static_cast<T>(std::get<int64_t>(value));
  };
  return spec;
}

std::vector<OptionSpec> make_table() {
  using K = OptionKind;
  std::vector<OptionSpec> t;
  // --- the compiled side ---------------------------------------------------------------------------
  t.push_back(field({"--compiled", "compiled", kAll, K::Text,
                     "what plays the compiled side: inductor, eager, aoti (the archive compiled by AOTInductor), aoti:PACKAGE.pt2, "
                     "external:COMMAND, fault:NODE:KIND"},
                    [](DiffOptions& o) -> std::string& { return o.compiled; }, "eager"));
  t.back().always_written = true;
  t.push_back(field({"--device", "device", kAll, K::Text,
                     "device of the eager runs and the compiler (inductor, external): cpu or cuda[:N]; default: the device the "
                     "graph was exported on when this machine has it, else cpu"},
                    [](DiffOptions& o) -> std::string& { return o.backend.device; }, "cuda:1"));
  t.back().program_default = true;
  t.push_back(field({"--reference-device", "reference_device", kAll, K::Text,
                     "where the fp64 reference runs in a GPU run: auto (the GPU when it fits in --gpu-memory, else the CPU), cpu, cuda",
                     {"auto", "cpu", "cuda"}},
                    [](DiffOptions& o) -> std::string& { return o.reference_device; }, "cpu"));
  t.push_back(field({"--gpu-memory", "gpu_memory", kAll, K::Size,
                     "GPU memory the engine's runs may hold (estimated before they start): 16G, 512M, none (default: what the "
                     "GPU has free); with less, --reference-device auto runs the fp64 reference on the CPU"},
                    [](DiffOptions& o) -> int64_t& { return o.gpu_memory; }, "40G"));
  t.push_back(field({"--inductor-config", "inductor_config", kAll, K::Texts,
                     "Inductor config override KEY=VALUE (a Python literal), repeatable: emulate_precision_casts=True"},
                    [](DiffOptions& o) -> std::vector<std::string>& { return o.backend.inductor_config; }, "emulate_precision_casts=True"));
  t.push_back(field({"--matmul-precision", "matmul_precision", kAll, K::Text,
                     "torch.set_float32_matmul_precision as your program sets it (high: TF32 on CUDA), for the eager runs and the "
                     "compiled side alike",
                     {"highest", "high", "medium"}},
                    [](DiffOptions& o) -> std::string& { return o.backend.matmul_precision; }, "high"));
  t.push_back(field({"--no-tf32", "no_tf32", kAll, K::Switch,
                     "TF32 off for matmuls and cuDNN convolutions (CUDA), eager and compiled alike"},
                    [](DiffOptions& o) -> bool& { return o.backend.no_tf32; }, ""));
  t.push_back(field({"--static", "static_shapes", kAll, K::Switch,
                     "compile at the inputs' sizes (dynamic=False) even where the archive exported a dim dynamic; default: those "
                     "dims compile symbolic, as torch.compile compiles dims marked dynamic (docs/dynamic-shapes.md)"},
                    [](DiffOptions& o) -> bool& { return o.backend.static_shapes; }, ""));
  t.push_back(field({"--timeout", "timeout", kAll, K::Real,
                     "seconds one compile or run may take before the worker is killed and the failure reported", {}, 0},
                    [](DiffOptions& o) -> double& { return o.backend.timeout_seconds; }, "12.5"));
  t.push_back(field({"--worker-python", "worker_python", kAll, K::Text,
                     "Python of the Inductor worker (default: the venv pt2diff was built with)"},
                    [](DiffOptions& o) -> std::string& { return o.backend.python; }, "/usr/bin/python3"));
  t.push_back(field({"--inductor-cache", "inductor_cache", kAll, K::Text,
                     "Inductor cache directory (default: ~/.cache/pt2diff/inductor)"},
                    [](DiffOptions& o) -> std::string& { return o.backend.inductor_cache_dir; }, "/tmp/inductor-cache"));
  t.back().written = false;  // where compiled code is kept changes no verdict
  t.push_back(field({"--overlap", "overlap", kDiffSweep, K::Text,
                     "compile while the engine computes: the whole graph beside the reference runs, every op alone (the exploded "
                     "compile) on a second worker beside it; auto: where the machine has 4 or more CPUs, or the compiler targets a "
                     "GPU; the report is the same either way",
                     {"auto", "on", "off"}},
                    [](DiffOptions& o) -> std::string& { return o.overlap; }, "off"));
  t.back().written = false;  // when compiles run changes no verdict
  // --- loading and feeding the graph ------------------------------------------------------------------
  t.push_back(field({"--load-library", nullptr, kAllAndInspect, K::Texts,
                     "a shared library registering custom ops (TORCH_LIBRARY), loaded first here and in the compiler's worker; "
                     "repeatable"},
                    [](DiffOptions& o) -> std::vector<std::string>& { return o.backend.op_libraries; }, "/opt/ops/libmy_ops.so"));
  {
    OptionSpec seed{"--seed", "seed", kAllAndInspect, K::Count,
                    "seed for --random-inputs, and of the random generators before every run (engine and compiled side alike)", {}, 0};
    // The engine seeds every run with it; a library caller may leave the generators alone (nullopt), which
    // no flag says: the CLI always seeds.
    seed.get = [](const DiffOptions& o) -> OptionValue { return static_cast<int64_t>(o.backend.seed.value_or(0)); };
    seed.set = [](DiffOptions& o, const OptionValue& v) { o.backend.seed = static_cast<uint64_t>(std::get<int64_t>(v)); };
    seed.example = "7";
    t.push_back(std::move(seed));
  }
  // --- the verdict rule -------------------------------------------------------------------------------
  {
    static const std::string help = [] {  // each rule's own words (rule_registry.h)
      std::string h = "verdict rule: ";
      for (const RuleKind* k : rule_kinds()) h += (k == rule_kinds().front() ? "" : ", ") + std::string(k->help);
      return h;
    }();
    OptionSpec rule{"--rule", "rule", kAll, K::Text, help.c_str()};
    rule.get = [](const DiffOptions& o) -> OptionValue { return rule_name(o.rule); };
    rule.set = [](DiffOptions& o, const OptionValue& v) {
      read_rule(std::get<std::string>(v), o.rule);  // Error(Usage) for a malformed rule
    };
    rule.example = "cosine:0.95";
    t.push_back(std::move(rule));
  }
  t.push_back(field({"--tol", "tol", kDiffCommand | kExplainCommand, K::Real, "tolerance of the verdict rule (atol = rtol for the allclose step)"},
                    [](DiffOptions& o) -> double& { return o.rule.tol; }, "1.5e-06"));
  t.push_back(field({"--fp32-multiplier", "fp32_multiplier", kAll, K::Real, "RMSE multiplier for fp32 outputs"},
                    [](DiffOptions& o) -> double& { return o.rule.fp32_multiplier; }, "2.5"));
  t.push_back(field({"--low-precision-multiplier", "low_precision_multiplier", kAll, K::Real,
                     "RMSE multiplier for fp16/bf16 outputs and outputs with fewer than 1000 elements"},
                    [](DiffOptions& o) -> double& { return o.rule.low_precision_multiplier; }, "4"));
  t.push_back(field({"--small-tensor-multipliers", "small_tensor_multipliers", kAll, K::Switch,
                     "use multiplier 8 for numel <= 500 and 10 for numel <= 10"},
                    [](DiffOptions& o) -> bool& { return o.rule.small_tensor_multipliers; }, ""));
  t.push_back(field({"--suspicious-ratio", "suspicious_ratio", kAll, K::Real,
                     "an output the rule passes is suspicious when its RMSE to fp64 is at least this many times eager's (eager's "
                     "floored at its dtype's rounding); 0: never",
                     {}, 0},
                    [](DiffOptions& o) -> double& { return o.rule.suspicious_ratio; }, "250"));
  t.push_back(field({"--node-ratio", "node_ratio", kAll, K::Real,
                     "node verdict: a node whose compiled local error (the exploded compile, fp64-exact inputs) is at least this many "
                     "times eager's local error makes the run at least suspicious, whatever the outputs say; 0: off (docs/verdicts.md)",
                     {}, 0},
                    [](DiffOptions& o) -> double& { return o.rule.node_ratio; }, "6"));
  t.push_back(field({"--node-fail-ratio", "node_fail_ratio", kAll, K::Real,
                     "node verdict: such a node at least this many times eager's local error makes the run fail; 0: never on node "
                     "evidence alone",
                     {}, 0},
                    [](DiffOptions& o) -> double& { return o.rule.node_fail_ratio; }, "24"));
  t.push_back(field({"--fail-on-suspicious", "fail_on_suspicious", kDiffCommand, K::Switch,
                     "exit 1 when an output is suspicious, as when one fails (default: suspicious exits 0)"},
                    [](DiffOptions& o) -> bool& { return o.fail_on_suspicious; }, ""));
  // --- what runs besides the verdicts ----------------------------------------------------------------
  t.push_back(field({"--localize-suspicious", "localize_suspicious", kDiffSweep, K::Switch,
                     "bisect the graph when an output is suspicious, as when one fails (sweep: with --localize)"},
                    [](DiffOptions& o) -> bool& { return o.localize_suspicious; }, ""));
  t.push_back(field({"--no-exploded", "exploded", kDiffSweep, K::NegatedSwitch,
                     "skip the exploded compile (every op on its own: the compiled local error column)"},
                    [](DiffOptions& o) -> bool& { return o.exploded; }, ""));
  t.push_back(field({"--no-kernel-map", "kernel_map", kDiffCommand, K::NegatedSwitch,
                     "do not observe the compiled code's buffers (the kernel table: each kernel's buffers judged, from the verdict's own run)"},
                    [](DiffOptions& o) -> bool& { return o.kernel_map; }, ""));
  t.push_back(field({"--no-localize", "localize", kDiffCommand, K::NegatedSwitch, "do not bisect the graph when an output diverges"},
                    [](DiffOptions& o) -> bool& { return o.localize.enabled; }, ""));
  {
    OptionSpec bisect{"--bisect", "bisect", kDiffCommand, K::Text,
                      "search of the localization: binary (about 2 log2 m + 4 compiles) or linear", {"binary", "linear"}};
    bisect.get = [](const DiffOptions& o) -> OptionValue {
      return std::string(o.localize.search == LocalizeOptions::Search::Linear ? "linear" : "binary");
    };
    bisect.set = [](DiffOptions& o, const OptionValue& v) {
      o.localize.search = std::get<std::string>(v) == "linear" ? LocalizeOptions::Search::Linear : LocalizeOptions::Search::Binary;
    };
    bisect.example = "linear";
    t.push_back(std::move(bisect));
  }
  t.push_back(field({"--max-compiles", "max_compiles", kDiffCommand, K::Count, "localization stops (inconclusive) past this many compiles",
                     {}, 0},
                    [](DiffOptions& o) -> size_t& { return o.localize.max_compiles; }, "9"));
  t.push_back(field({"--repeats", "repeats", kDiffCommand, K::Count, "runs of each boundary probe; answers that differ are reported as flaky",
                     {}, 1, 100},
                    [](DiffOptions& o) -> int& { return o.localize.repeats; }, "3"));
  t.push_back(field({"--top", "top", kDiffCommand, K::Count, "how many nodes the ranking of introduced error lists", {}, 0},
                    [](DiffOptions& o) -> size_t& { return o.top; }, "4"));
  t.push_back(field({"--workaround", "workaround", kDiffCommand, K::Switch,
                     "when an output fails: the smallest set of nodes to leave eager for the compiled graph to pass, and the lines "
                     "(torch.compiler.disable) that do it, verified by one more compile (docs/workaround.md)"},
                    [](DiffOptions& o) -> bool& { return o.workaround.enabled; }, ""));
  t.push_back(field({"--workaround-max-compiles", "workaround_max_compiles", kDiffCommand, K::Count,
                     "the eager set search stops past this many compiles", {}, 1, 10000},
                    [](DiffOptions& o) -> size_t& { return o.workaround.max_compiles; }, "7"));
  t.push_back(field({"--search-compiler", "search_compiler", kDiffCommand, K::Switch,
                     "when an output fails: search Inductor's own decisions (passes, fusions, lowerings) on the whole graph for the "
                     "one that makes it diverge, even when localization named an op (docs/compiler-search.md); without it the "
                     "search runs only when localization names none because only the whole compile diverges"},
                    [](DiffOptions& o) -> bool& { return o.compiler_search.always; }, ""));
  t.push_back(field({"--no-search-compiler", "compiler_search", kDiffCommand, K::NegatedSwitch,
                     "never search the compiler's decisions, even when only the whole compile diverges"},
                    [](DiffOptions& o) -> bool& { return o.compiler_search.enabled; }, ""));
  t.push_back(field({"--search-compiler-max-compiles", "search_compiler_max_compiles", kDiffCommand, K::Count,
                     "the compiler search stops past this many compiles", {}, 1, 10000},
                    [](DiffOptions& o) -> size_t& { return o.compiler_search.max_compiles; }, "12"));
  t.push_back(field({"--max-memory", "max_memory", kAllAndInspect, K::Size,
                     "refuse a run whose values would need more memory than this, estimated from the graph's shapes before anything "
                     "is allocated: 16G, 512M, none (default: the memory available when it starts)"},
                    [](DiffOptions& o) -> int64_t& { return o.max_memory; }, "1.5G"));
  t.push_back(field({"--repro", "repro", kDiffCommand, K::Text,
                     "when a culprit is named, write it to this directory as a standalone archive, its inputs and the command"},
                    [](DiffOptions& o) -> std::string& { return o.repro_dir; }, "/tmp/repro"));
  t.back().written = false;  // where a repro goes changes no verdict
  return t;
}

std::string quoted_list(const std::vector<std::string>& items) {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) s += (i == 0 ? "" : i + 1 == items.size() ? " or " : ", ") + ("'" + items[i] + "'");
  return s;
}

std::string number_text(double x) {
  if (x == std::floor(x) && std::abs(x) < 1e15) return fmt::format("{}", static_cast<int64_t>(x));
  return fmt::format("{}", x);
}

}  // namespace

const std::vector<OptionSpec>& option_table() {
  static const std::vector<OptionSpec> table = make_table();
  return table;
}

const OptionSpec* find_option_flag(const std::string& flag) {
  for (const OptionSpec& o : option_table())
    if (flag == o.flag) return &o;
  return nullptr;
}

const OptionSpec* find_option_keyword(const std::string& keyword) {
  for (const OptionSpec& o : option_table())
    if (o.keyword && keyword == o.keyword) return &o;
  return nullptr;
}

std::string option_text(const OptionSpec& spec, const OptionValue& value) {
  return std::visit(
      [&](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
        else if constexpr (std::is_same_v<T, int64_t>) return spec.kind == OptionKind::Size && v < 0 ? "none" : fmt::format("{}", v);
        else if constexpr (std::is_same_v<T, double>) return fmt::format("{}", v);
        else if constexpr (std::is_same_v<T, std::string>) return v;
        else {
          std::string s;
          for (const std::string& item : v) s += (s.empty() ? "" : ",") + item;
          return s;
        }
      },
      value);
}

std::string option_problem(const OptionSpec& spec, const OptionValue& value, const std::string& name) {
  const bool flag = name.rfind("--", 0) == 0;
  // How the message shows the value: `--bisect ternary` on the command line, `bisect='ternary'` in Python.
  auto shown = [&](const std::string& text, bool is_string) {
    return flag ? name + " " + text : name + "=" + (is_string ? "'" + text + "'" : text);
  };
  if (const auto* text = std::get_if<std::string>(&value)) {
    // An empty value is the option's "not set" (the default), not one of its choices.
    if (spec.choices.empty() || text->empty()) return "";
    for (const std::string& c : spec.choices)
      if (*text == c) return "";
    return fmt::format("{}: expected {}", shown(*text, true), quoted_list(spec.choices));
  }
  double x = 0;
  if (const auto* d = std::get_if<double>(&value)) x = *d;
  else if (const auto* i = std::get_if<int64_t>(&value)) x = static_cast<double>(*i);
  else return "";
  if (spec.kind == OptionKind::Size) return "";  // any byte count; -1 is "none"
  if (std::isnan(x) || x < spec.minimum || x > spec.maximum) {
    const std::string text = std::holds_alternative<double>(value) ? fmt::format("{}", x) : number_text(x);
    if (spec.maximum < 1e300) return fmt::format("{}: expected {} to {}", shown(text, false), number_text(spec.minimum), number_text(spec.maximum));
    return fmt::format("{}: expected a number >= {}", shown(text, false), number_text(spec.minimum));
  }
  return "";
}

OptionValue parse_option(const OptionSpec& spec, const std::string& text) {
  auto bad = [&](const std::string& what) { return Error(Error::Kind::Usage, fmt::format("{} {}: {}", spec.flag, text, what)); };
  OptionValue value;
  switch (spec.kind) {
    case OptionKind::Switch:
    case OptionKind::NegatedSwitch:
      throw Error(Error::Kind::Internal, fmt::format("{} takes no value", spec.flag));
    case OptionKind::Text:
      value = text;
      break;
    case OptionKind::Texts:
      value = std::vector<std::string>{text};
      break;
    case OptionKind::Size: {
      auto bytes = parse_byte_size(text);
      if (!bytes) throw bad("not a size (16G, 512M, 1.5T, bytes) or none");
      value = *bytes;
      break;
    }
    case OptionKind::Real:
    case OptionKind::Count: {
      size_t used = 0;
      double x = 0;
      try {
        x = std::stod(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != text.size()) throw bad(spec.kind == OptionKind::Count ? "not a whole number" : "not a number");
      if (spec.kind == OptionKind::Count) {
        if (x != std::floor(x)) throw bad("not a whole number");
        value = static_cast<int64_t>(x);
      } else {
        value = x;
      }
      break;
    }
  }
  if (std::string problem = option_problem(spec, value, spec.flag); !problem.empty()) throw Error(Error::Kind::Usage, problem);
  return value;
}

}  // namespace pt2diff
