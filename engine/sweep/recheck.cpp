// engine/sweep/recheck.cpp — one graph through the compilers of other torch installations (pt2diff/recheck.h): each
// torch probed, its diff run with its Python as the worker's, adjacent verdicts that differ compared node by node,
// and the first bad torch found by bisection.
#include "pt2diff/recheck.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <map>
#include <stdexcept>
#include <unistd.h>

#include "engine/sweep/run_summary.h"
#include "engine/worker/worker_process.h"
#include "pt2diff/diff.h"
#include "pt2diff/error.h"
#include "pt2diff/failure.h"
#include "pt2diff/inputs.h"
#include "pt2diff/program.h"
#include "pt2diff/verdict.h"

namespace pt2diff {

namespace fs = std::filesystem;

namespace {

double recheck_seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// The last non-empty line of a file (a child's stderr), at most 300 characters.
std::string last_stderr_line(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  if (last.size() > 300) last = last.substr(0, 297) + "...";
  return last;
}

/// What a probe prints: "torch VERSION" or "error TYPE: MESSAGE", one line.
constexpr const char* kProbe =
    "try:\n"
    "    import torch\n"
    "except BaseException as e:\n"
    "    print('error ' + type(e).__name__ + ': ' + (str(e).splitlines() or [''])[0], flush=True)\n"
    "else:\n"
    "    print('torch ' + torch.__version__, flush=True)\n";

/// A worker's failure that means this torch cannot judge the graph at all (rather than a compiler bug the
/// verdict reports): the archive does not load, the worker cannot start or keeps dying.
bool torch_unusable(const DiffResult& r, std::string* why) {
  for (const CompileRecord& c : r.compiles) {
    if (c.ok || !c.failure) continue;
    if (*c.failure == FailureKind::Unusable || *c.failure == FailureKind::WorkerDied) {
      *why = fmt::format("{} ({})", c.message, failure_kind_name(c.failure));
      return true;
    }
  }
  return false;
}

const NodeError* find_recheck_node(const DiffResult& r, const std::string& name) {
  for (const NodeError& n : r.nodes)
    if (n.name == name) return &n;
  return nullptr;
}

void fill_torch_row(TorchRow& row, DiffResult r) {
  fill_summary(row, r);
  for (const CompileRecord& c : r.compiles)
    if (!c.ok && row.compile_failure.empty()) row.compile_failure = fmt::format("{} compile: {}: {}", c.what, failure_kind_name(c.failure), c.message);
  if (r.localization && r.localization->culprit.named()) {
    const Culprit& c = r.localization->culprit;
    row.culprit = c.nodes.size() == 1 ? c.nodes.front() : c.nodes.front() + " .. " + c.nodes.back();
    row.culprit_op = c.ops.size() == 1 ? c.ops.front() : c.ops.front() + " .. " + c.ops.back();
    row.culprit_source = c.sources.empty() ? "" : c.sources.front();
    // The culprit compiled alone on fp64-exact inputs, its error over eager's: the localization's own verdict on it (a
    // window's too); else the exploded compile's ratio at its first node.
    row.culprit_ratio = c.verdict.error_ratio;
    if (!(row.culprit_ratio > 0))
      if (const NodeError* n = find_recheck_node(r, c.nodes.front())) row.culprit_ratio = n->compiled_vs_eager;
  }
  row.result = std::move(r);
}

}  // namespace

TorchInstall parse_torch_install(const std::string& spec) {
  TorchInstall t;
  const size_t eq = spec.find('=');
  if (eq != std::string::npos) {
    t.label = spec.substr(0, eq);
    t.python = spec.substr(eq + 1);
  } else {
    t.python = spec;
  }
  if (t.python.empty())
    throw Error(Error::Kind::Usage, fmt::format("--torch '{}': expected PYTHON or LABEL=PYTHON (the interpreter of a torch installation)", spec));
  return t;
}

bool torch_version_supported(const std::string& version) {
  int major = 0, minor = 0;
  if (std::sscanf(version.c_str(), "%d.%d", &major, &minor) != 2) return false;
  return major == 2 && minor >= 11 && minor <= 14;
}

TorchProbe probe_torch(const std::string& python, double timeout_seconds, bool any_version) {
  TorchProbe probe;
  std::string dir = (fs::temp_directory_path() / "pt2diff-probe-XXXXXX").string();
  std::vector<char> buf(dir.begin(), dir.end());
  buf.push_back('\0');
  const char* made = mkdtemp(buf.data());
  const std::string err = made ? std::string(made) + "/stderr" : "/dev/null";
  std::string line;
  WorkerProcess::Read got = WorkerProcess::Read::Closed;
  std::string status;
  try {
    WorkerProcess child({python, "-c", kProbe}, err);
    got = child.read_line(line, timeout_seconds, [](double) {});
    if (got != WorkerProcess::Read::Line) child.kill();
    status = child.exit_description();
  } catch (const std::exception& e) {
    probe.problem = fmt::format("{} cannot be started: {}", python, e.what());
  }
  const std::string tail = made ? last_stderr_line(err) : "";
  if (made) fs::remove_all(made);
  if (!probe.problem.empty()) return probe;
  if (got == WorkerProcess::Read::TimedOut) {
    probe.problem = fmt::format("{} did not import torch within {:.0f} s", python, timeout_seconds);
  } else if (got == WorkerProcess::Read::Closed) {
    probe.problem = fmt::format("{} did not run ({}){}", python, status, tail.empty() ? "" : ": " + tail);
  } else if (line.rfind("torch ", 0) == 0) {
    probe.version = line.substr(6);
    if (!any_version && !torch_version_supported(probe.version))
      probe.problem = fmt::format("torch {} at {} is outside the versions pt2diff's worker supports (2.11 to 2.14): use one of "
                                  "those, or --any-version to try it anyway",
                                  probe.version, python);
  } else if (line.rfind("error ", 0) == 0) {
    probe.problem = fmt::format("{} cannot import torch ({}): point --torch at the Python of a torch installation", python, line.substr(6));
  } else {
    probe.problem = fmt::format("{} answered '{}' when asked for torch's version", python, line);
  }
  return probe;
}

std::optional<size_t> bisect_first_bad(size_t n, const std::function<std::optional<bool>(size_t)>& is_bad, std::string* why) {
  auto say = [&](std::string s) {
    if (why) *why = std::move(s);
  };
  if (n < 2) {
    say("bisection needs at least two torches, oldest first");
    return std::nullopt;
  }
  const std::optional<bool> first = is_bad(0), last = is_bad(n - 1);
  if (!first || !last) {
    say(fmt::format("the {} torch could not be judged", !first ? "first" : "last"));
    return std::nullopt;
  }
  if (*first) {
    say("the first torch is already bad: nothing to bisect (give an older one that passes first)");
    return std::nullopt;
  }
  if (!*last) {
    say("the last torch is good: nothing to bisect");
    return std::nullopt;
  }
  size_t good = 0, bad = n - 1;  // invariant: good is good, bad is bad
  while (bad - good > 1) {
    const size_t mid = good + (bad - good) / 2;
    const std::optional<bool> m = is_bad(mid);
    if (!m) {
      say(fmt::format("torch {} of {} could not be judged: the first bad one is after {} and at or before {}", mid + 1, n, good + 1, bad + 1));
      return std::nullopt;
    }
    (*m ? bad : good) = mid;
  }
  say("");
  return bad;
}

std::vector<NodeChange> changed_nodes(const DiffResult& good, const DiffResult& bad, double factor) {
  std::vector<NodeChange> out;
  std::map<std::string, const NodeError*> before;
  for (const NodeError& n : good.nodes) before[n.name] = &n;
  for (const NodeError& b : bad.nodes) {
    auto it = before.find(b.name);
    if (it == before.end()) continue;
    const NodeError& a = *it->second;
    if (a.compiled_local_relative < 0 || b.compiled_local_relative < 0) continue;
    // Below eager's own local error both compiles are within rounding: a change there is noise.
    const double floor = std::max({a.local_relative, b.local_relative, 1e-300});
    const double lo = std::max(std::min(a.compiled_local_relative, b.compiled_local_relative), floor);
    const double hi = std::max(a.compiled_local_relative, b.compiled_local_relative);
    if (hi < lo * factor) continue;
    NodeChange c;
    c.node = b.name;
    c.op = b.target;
    c.source = b.source;
    c.module_path = b.module_path;
    c.before = a.compiled_local_relative;
    c.after = b.compiled_local_relative;
    c.eager = b.local_relative;
    c.factor = c.before > 0 ? c.after / c.before : std::numeric_limits<double>::infinity();
    out.push_back(std::move(c));
  }
  return out;
}

namespace {

Regression compare_rows(const std::vector<TorchRow>& rows, size_t earlier, size_t later, double factor) {
  Regression g;
  g.fixed = rows[earlier].fails;
  g.good = g.fixed ? later : earlier;
  g.bad = g.fixed ? earlier : later;
  const TorchRow& good = rows[g.good];
  const TorchRow& bad = rows[g.bad];
  g.changed = changed_nodes(*good.result, *bad.result, factor);
  if (!bad.culprit.empty())
    g.first_diverging = fmt::format("{} ({}){}", bad.culprit, bad.culprit_op, bad.culprit_source.empty() ? "" : " at " + bad.culprit_source);
  auto name = [&](const TorchRow& r) { return r.torch.label.empty() ? r.version : r.torch.label; };
  std::string nodes;
  for (size_t i = 0; i < g.changed.size() && i < 3; ++i) nodes += (i ? ", " : "") + g.changed[i].node;
  if (g.changed.size() > 3) nodes += fmt::format(" and {} more", g.changed.size() - 3);
  g.summary = fmt::format("{} {} -> {}: {}; {}", g.fixed ? "fixed" : "regressed", name(rows[earlier]), name(rows[later]),
                          g.changed.empty() ? "no node's compiled local error changed (the difference is in how ops are fused)"
                                            : fmt::format("compiled local error changed at {}", nodes),
                          g.first_diverging.empty() ? "no culprit named at the failing torch" : "first diverging op " + g.first_diverging);
  return g;
}

}  // namespace

RecheckResult recheck(const Program& program, const BoundInputs& inputs, const RecheckOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  if (options.torches.empty())
    throw Error(Error::Kind::Usage, "recheck needs at least one torch: --torch PYTHON (or LABEL=PYTHON), repeatable, oldest first");
  if (options.diff.compiled != "inductor" && options.diff.compiled.rfind("aoti:", 0) != 0)
    throw Error(Error::Kind::Usage, fmt::format("recheck runs a compiler of each torch (inductor or aoti:...), not '{}'", options.diff.compiled));
  RecheckResult result;
  result.graph = program.path;
  result.inputs = inputs.origin;
  for (const TorchInstall& t : options.torches) {
    TorchRow row;
    row.torch = t;
    row.skipped = true;
    result.rows.push_back(std::move(row));
  }
  // One torch judged (once): its row filled; whether it counts as bad, nullopt when it could not be judged.
  auto judge = [&](size_t i) -> std::optional<bool> {
    TorchRow& row = result.rows[i];
    if (!row.skipped) return row.judged && !row.compiled_failed ? std::optional<bool>(row.fails) : std::nullopt;
    row.skipped = false;
    const auto t0 = std::chrono::steady_clock::now();
    const TorchProbe probe = probe_torch(row.torch.python, 120, options.any_version);
    row.version = probe.version;
    if (!probe.problem.empty()) {
      row.problem = probe.problem;
    } else {
      DiffOptions o = options.diff;
      o.backend.python = row.torch.python;
      try {
        DiffResult r = diff(program, inputs, o);
        std::string why;
        if (torch_unusable(r, &why))
          row.problem = fmt::format("torch {} cannot judge this graph: {}", row.version, why);
        else
          fill_torch_row(row, std::move(r));
      } catch (const Error& e) {
        row.problem = fmt::format("torch {}: {}", row.version, e.what());
      }
    }
    row.seconds = recheck_seconds_since(t0);
    if (!row.judged || row.compiled_failed) return std::nullopt;
    return row.fails;
  };

  if (options.bisect) {
    Bisection b;
    std::string why;
    b.first_bad = bisect_first_bad(result.rows.size(), judge, &why);
    for (const TorchRow& r : result.rows) b.runs += r.skipped ? 0 : 1;
    auto name = [&](const TorchRow& r) { return r.torch.label.empty() ? r.version : r.torch.label; };
    b.summary = b.first_bad ? fmt::format("first bad torch: {} (after {}; {} of {} torches run)", name(result.rows[*b.first_bad]),
                                          name(result.rows[*b.first_bad - 1]), b.runs, result.rows.size())
                            : fmt::format("no first bad torch: {} ({} of {} torches run)", why, b.runs, result.rows.size());
    result.bisection = std::move(b);
  } else {
    for (size_t i = 0; i < result.rows.size(); ++i) judge(i);
  }
  // Adjacent judged torches (in the order given, skipping those not run) whose verdicts differ.
  std::optional<size_t> previous;
  for (size_t i = 0; i < result.rows.size(); ++i) {
    const TorchRow& r = result.rows[i];
    if (!r.judged || r.compiled_failed) continue;
    if (previous && result.rows[*previous].fails != r.fails) result.regressions.push_back(compare_rows(result.rows, *previous, i, options.change_factor));
    previous = i;
  }
  result.seconds = recheck_seconds_since(start);
  return result;
}

}  // namespace pt2diff
