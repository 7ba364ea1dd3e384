// engine/cli/recheck_command.cpp — `pt2diff recheck TARGET [INPUTS] --torch PY --torch LABEL=PY ...`: a graph, a
// repro directory or a batch summary judged through the compilers of other torch installations; one table per case,
// the regression between a torch that passes and one that fails, --bisect-versions for the first bad torch (docs/upstream.md).
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "engine/cli/command.h"
#include "engine/report/progress.h"
#include "pt2diff/error.h"
#include "pt2diff/recheck.h"

namespace pt2diff::cli {

namespace {

namespace fs = std::filesystem;

/// One graph to recheck and its inputs ("" for the archive's sample inputs).
struct Case {
  std::string graph, inputs;
};

/// The cases of a batch summary (docs/batch-summary.schema.json) worth rechecking: those that diverged, were
/// suspicious or whose compiler failed (`every`: all). Relative paths are read from the summary's folder.
std::vector<Case> summary_cases(const std::string& path, const nlohmann::json& doc, bool every) {
  std::vector<Case> out;
  const fs::path folder = fs::path(path).parent_path();
  auto place = [&](const std::string& p) {
    if (p.empty() || fs::path(p).is_absolute() || fs::exists(p)) return p;
    return (folder / p).string();
  };
  // A field of a row as text; "" when absent or not a string (a summary's nulls).
  auto text = [](const nlohmann::json& row, const char* key) {
    auto it = row.find(key);
    return it != row.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  for (const nlohmann::json& row : doc.value("cases", nlohmann::json::array())) {
    const std::string verdict = text(row, "verdict"), level = text(row, "level"), graph = text(row, "graph");
    const bool worth = verdict == "diverged" || verdict == "compiler_failed" || level == "suspicious" || level == "fail";
    if ((!every && !worth) || graph.empty()) continue;
    const std::string inputs = text(row, "inputs");
    out.push_back({place(graph), inputs.empty() ? "" : place(inputs)});
  }
  return out;
}

class RecheckCommand final : public Command {
 public:
  void add_to(CLI::App& app) override {
    app.add_option("TARGET", target_,
                   "a torch.export archive (.pt2), a repro directory written by --repro (its repro.pt2 and repro_inputs.pt), or a "
                   "batch summary (summary.json: its diverged, suspicious and compiler-failed cases)")
        ->required();
    app.add_option("INPUTS", inputs_, "inputs of a .pt2 TARGET (torch.save file); default: the archive's sample inputs");
    app.add_option("--model", model_, "which models/<name>.json of the archive (default: the only one, or 'model')");
    app.add_option("--torch", torches_,
                   "the Python of a torch installation (a venv's bin/python, a nightly, a source build), as PYTHON or LABEL=PYTHON; "
                   "repeatable, oldest first")
        ->required();
    app.add_flag("--bisect-versions", bisect_, "run only what a bisection needs to name the first bad torch (the first must pass, the last fail)");
    app.add_flag("--any-version", any_version_, "also run a torch outside 2.11-2.14 (its worker may fail; the row says how)");
    app.add_flag("--every-case", every_case_, "with a batch summary: recheck every case, not only those that did not agree");
    app.add_option("--change-factor", change_factor_, "a node's compiled local error changed between two torches when one is this many "
                                                      "times the other, above eager's own local error (default 2)");
    app.add_option("--json", json_, "write every case's table, regressions and bisection as JSON (docs/recheck.schema.json)");
    table_.add_to(app, kDiffCommand);
  }

  int run() override {
    std::vector<Case> cases = resolve();
    std::vector<TorchInstall> torches;
    for (const std::string& t : torches_) torches.push_back(parse_torch_install(t));
    TerminalProgress progress;
    std::vector<RecheckResult> results;
    bool unusable = false, fails = false, compiler = false;
    for (const Case& c : cases) {
      Program program;
      BoundInputs bound;
      RecheckOptions options;
      try {
        GraphOptions graph;
        graph.graph = c.graph;
        graph.model = model_;
        program = graph.load(table_.libraries());
        options.diff = table_.get(program);
        InputOptions in;
        in.inputs = c.inputs;
        bound = in.bind(program, options.diff);
      } catch (const Error& e) {
        if (cases.size() == 1) throw;
        std::cerr << fmt::format("pt2diff: {}: not rechecked: {}\n", c.graph, e.what());
        unusable = true;
        continue;
      }
      options.torches = torches;
      options.bisect = bisect_;
      options.any_version = any_version_;
      options.change_factor = change_factor_;
      options.diff.backend.on_wait = [&](const std::string& activity, double elapsed) { progress.on_wait(activity, elapsed); };
      RecheckResult r = recheck(program, bound, options);
      progress.clear();
      if (cases.size() > 1) std::cout << "\n";
      std::cout << recheck_to_text(r);
      for (const TorchRow& row : r.rows) {
        unusable = unusable || (!row.judged && !row.skipped);
        fails = fails || (row.judged && row.fails);
        compiler = compiler || row.compiled_failed;
        if (!row.judged && !row.skipped) std::cerr << fmt::format("pt2diff: {}: {}\n", row.torch.label.empty() ? row.torch.python : row.torch.label, row.problem);
      }
      results.push_back(std::move(r));
    }
    if (!json_.empty()) write_file(json_, recheck_to_json(results));
    // A torch that could not judge (bad input: no torch, an unsupported version, an archive it cannot load) is exit 2,
    // after every other torch ran and the reports were written; else 1 when a torch fails, 4 when only compilers failed.
    return unusable ? 2 : fails ? 1 : compiler ? 4 : 0;
  }

 private:
  std::vector<Case> resolve() const {
    if (fs::is_directory(target_)) {
      const fs::path dir(target_);
      if (!fs::exists(dir / "repro.pt2"))
        throw Error(Error::Kind::Usage, fmt::format("{} is a directory without repro.pt2: give a repro directory written by --repro, a "
                                                    ".pt2 archive or a batch summary",
                                                    target_));
      const fs::path in = dir / "repro_inputs.pt";
      return {{(dir / "repro.pt2").string(), !inputs_.empty() ? inputs_ : fs::exists(in) ? in.string() : ""}};
    }
    if (fs::path(target_).extension() == ".json") {
      std::ifstream f(target_);
      if (!f) throw Error(Error::Kind::Usage, fmt::format("cannot read {}", target_));
      nlohmann::json doc = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
      if (doc.is_discarded() || !doc.is_object() || doc.value("format", "") != "pt2diff-batch summary 1")
        throw Error(Error::Kind::Usage, fmt::format("{} is not a batch summary (pt2diff batch --summary writes one: format "
                                                    "\"pt2diff-batch summary 1\")",
                                                    target_));
      std::vector<Case> cases = summary_cases(target_, doc, every_case_);
      if (cases.empty())
        throw Error(Error::Kind::Usage, fmt::format("{}: every case agreed; nothing to recheck (--every-case rechecks them all)", target_));
      return cases;
    }
    return {{target_, inputs_}};
  }

  std::string target_, inputs_, model_, json_;
  std::vector<std::string> torches_;
  bool bisect_ = false, any_version_ = false, every_case_ = false;
  double change_factor_ = 2;
  TableOptions table_;
};

}  // namespace

std::unique_ptr<Command> make_recheck_command() { return std::make_unique<RecheckCommand>(); }

}  // namespace pt2diff::cli
