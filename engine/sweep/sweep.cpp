// engine/sweep/sweep.cpp — implements sweep.h: one diff() with every value kept, then the verdict rule
// re-applied per grid point; localization per failing point through a backend that compiles once.
#include "pt2diff/sweep.h"

#include <ATen/ops/allclose.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <functional>

#include "engine/backends/backends.h"
#include "engine/compare/judge_measured.h"
#include "graphs/rules/rule_registry.h"
#include "pt2diff/error.h"
#include "pt2diff/compare.h"
#include "pt2diff/values.h"

namespace pt2diff {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

ToleranceRule rule_at(const ToleranceRule& base, double tol, double multiplier) {
  ToleranceRule r = base;
  r.tol = tol;
  if (multiplier > 0) r.fp32_multiplier = r.low_precision_multiplier = multiplier;
  return r;
}

/// A value's errors to fp64 on both sides, measured once for every point of the sweep (judge_measured): the
/// rule at another tolerance judges the same errors.
struct Measured {
  Metrics result, eager;
  bool known = false;
};

Measured measured(const at::Tensor& result, const at::Tensor& eager, const at::Tensor& fp64) {
  Measured m;
  if (!result.defined() || !eager.defined() || !fp64.defined() || result.sizes() != eager.sizes() || result.sizes() != fp64.sizes())
    return m;
  m.result = measure(result, fp64);
  m.eager = measure(eager, fp64);
  m.known = true;
  return m;
}

Verdict judge_with(const at::Tensor& result, const at::Tensor& eager, const at::Tensor& fp64, const ToleranceRule& rule, const Measured& m) {
  return judge_measured(result, eager, fp64, rule, m.known ? &m.result : nullptr, m.known ? &m.eager : nullptr);
}

Verdict judge_output(const OutputVerdict& o, const OutputValues& values, const ToleranceRule& rule, const Measured& m) {
  if (!values.compiled.defined() || !values.eager.defined()) return o.verdict;  // no compiled value: fails at every tol
  return judge_with(values.compiled, values.eager, values.fp64, rule, m);
}

/// The smallest tol in [0, 1e3] at which `passes` holds (it is monotone in tol), to 0.1%.
std::optional<double> smallest_passing(const std::function<bool(double)>& passes) {
  if (passes(0)) return 0.0;
  double lo = 1e-15, hi = 1e3;
  if (!passes(hi)) return std::nullopt;
  if (passes(lo)) return lo;
  while (hi / lo > 1.001) {
    const double mid = std::sqrt(lo * hi);
    (passes(mid) ? hi : lo) = mid;
  }
  return hi;
}

}  // namespace

std::vector<double> parse_tolerances(const std::string& spec) {
  auto bad = [&](const std::string& why) -> Error {
    return Error(Error::Kind::Usage, fmt::format("--tol {}: {} (forms: LO:HI:N, N log-spaced points, or A,B,C)", spec, why));
  };
  auto number = [&](const std::string& text) {
    try {
      size_t used = 0;
      const double x = std::stod(text, &used);
      if (used == text.size() && x > 0 && std::isfinite(x)) return x;
    } catch (const std::exception&) {
    }
    throw bad(fmt::format("'{}' is not a positive number", text));
  };
  std::vector<double> tols;
  if (spec.find(':') != std::string::npos) {
    const auto a = spec.find(':'), b = spec.find(':', a + 1);
    if (b == std::string::npos) throw bad("a range needs three parts");
    const double lo = number(spec.substr(0, a)), hi = number(spec.substr(a + 1, b - a - 1));
    int n = 0;
    try {
      n = std::stoi(spec.substr(b + 1));
    } catch (const std::exception&) {
    }
    if (n < 2 || n > 10000) throw bad("N must be a whole number from 2 to 10000");
    if (hi <= lo) throw bad("HI must be larger than LO");
    for (int i = 0; i < n; ++i) tols.push_back(lo * std::pow(hi / lo, static_cast<double>(i) / (n - 1)));
    return tols;
  }
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    tols.push_back(number(spec.substr(start, comma - start)));
    start = comma + 1;
  }
  std::sort(tols.begin(), tols.end());
  return tols;
}

namespace {

/// One point of the sweep: every output and every node value of the run judged with `rule` (at `tol`, `multiplier`),
/// each from its measurements (`outputs_measured` by output; `locals_measured` in the order the nodes' values come).
SweepPoint judge_point(const SweepResult& s, const ToleranceRule& rule, double tol, double multiplier,
                       const std::vector<Measured>& outputs_measured, const std::vector<Measured>& locals_measured) {
  SweepPoint p;
  p.tol = tol;
  p.multiplier = multiplier;
  for (size_t i = 0; i < s.run.outputs.size(); ++i) {
    p.outputs.push_back(judge_output(s.run.outputs[i], s.run.values->outputs[i], rule, outputs_measured[i]));
    if (!p.outputs.back().pass) ++p.failing_outputs;
    if (p.outputs.back().level == Level::Suspicious) ++p.suspicious_outputs;
  }
  size_t next_local = 0;
  for (const NodeError& n : s.run.nodes) {
    bool local_fails = false, propagated_fails = false;
    for (const ValueError& v : n.values) {
      const NodeValues* kept = s.run.values->node(v.name);
      if (!v.compared || !kept || !kept->fp64.defined()) continue;
      if (kept->compiled_local.defined() &&
          !judge_with(kept->compiled_local, kept->local, kept->fp64, rule, locals_measured[next_local++]).pass)
        local_fails = true;
      if (kept->eager.is_floating_point() &&
          !at::allclose(kept->eager.to(kept->fp64.device(), at::kDouble), kept->fp64.to(at::kDouble), tol, tol, /*equal_nan=*/true))
        propagated_fails = true;
    }
    if (local_fails && p.first_diverging.empty()) p.first_diverging = n.name;
    p.local_failures += local_fails;
    p.propagated_failures += propagated_fails;
  }
  return p;
}

}  // namespace

SweepResult sweep(const Program& program, const BoundInputs& inputs, const SweepOptions& options) {
  if (options.tols.empty()) throw Error(Error::Kind::Usage, "a sweep needs at least one tolerance (--tol LO:HI:N or A,B,C)");
  if (!rule_kind(options.diff.rule.kind).uses_tol)
    throw Error(Error::Kind::Usage, fmt::format("--rule {}: a sweep varies --tol, which only the {} rules use",
                                                rule_name(options.diff.rule), rules_using_tol()));
  for (double m : options.multipliers)
    if (!(m > 0)) throw Error(Error::Kind::Usage, fmt::format("--multiplier {}: multipliers must be positive", m));
  SweepResult s;
  s.multipliers = options.multipliers.empty() ? std::vector<double>{0} : options.multipliers;

  // One backend for the whole sweep, compiling each region once.
  std::function<size_t()> compiles;
  std::unique_ptr<Backend> backend =
      make_caching_backend(make_backend(options.diff.compiled, program, options.diff.backend), &compiles);
  DiffOptions once = options.diff;
  once.keep_values = true;
  once.localize.enabled = false;
  auto start = std::chrono::steady_clock::now();
  s.run = diff(program, inputs, once, *backend);
  s.run_seconds = seconds_since(start);

  start = std::chrono::steady_clock::now();
  std::vector<Measured> outputs_measured;
  for (const OutputValues& o : s.run.values->outputs) outputs_measured.push_back(measured(o.compiled, o.eager, o.fp64));
  std::vector<Measured> locals_measured;  // each compared node value's, in the order the points visit them
  for (const NodeError& n : s.run.nodes)
    for (const ValueError& v : n.values) {
      const NodeValues* kept = s.run.values->node(v.name);
      if (v.compared && kept && kept->fp64.defined() && kept->compiled_local.defined())
        locals_measured.push_back(measured(kept->compiled_local, kept->local, kept->fp64));
    }
  for (double multiplier : s.multipliers)
    for (double tol : options.tols) {
      s.points.push_back(judge_point(s, rule_at(options.diff.rule, tol, multiplier), tol, multiplier, outputs_measured, locals_measured));
    }
  for (size_t i = 0; i < s.run.outputs.size(); ++i) {
    std::vector<std::optional<double>> per_multiplier;
    for (double multiplier : s.multipliers)
      per_multiplier.push_back(smallest_passing([&](double tol) {
        return judge_output(s.run.outputs[i], s.run.values->outputs[i], rule_at(options.diff.rule, tol, multiplier),
                            outputs_measured[i]).pass;
      }));
    s.min_passing_tol.push_back(std::move(per_multiplier));
  }
  s.judge_seconds = seconds_since(start);

  if (options.localize && backend->compiles_regions()) {
    start = std::chrono::steady_clock::now();
    for (SweepPoint& p : s.points) {
      if (!p.failing_outputs && !(options.diff.localize_suspicious && p.suspicious_outputs)) continue;
      DiffOptions at_point = options.diff;
      at_point.rule = rule_at(options.diff.rule, p.tol, p.multiplier);
      at_point.localize.enabled = true;
      at_point.exploded = options.diff.exploded;  // a cached compile: its suspects guide the search
      p.localization = diff(program, inputs, at_point, *backend).localization;
    }
    s.localize_seconds = seconds_since(start);
  }
  s.compiles = compiles();
  return s;
}

}  // namespace pt2diff
