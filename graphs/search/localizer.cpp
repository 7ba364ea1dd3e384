// graphs/search/localizer.cpp — runs the phases in order over an oracle and turns what they found
// into a Culprit. Nothing here compiles or prints: the oracle compiles, the caller reports.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>

#include "graphs/search/search_state.h"
#include "graphs/wording/wording.h"

namespace pt2diff {

const char* culprit_kind_name(Culprit::Kind kind) {
  switch (kind) {
    case Culprit::Kind::SingleOp: return "single_op";
    case Culprit::Kind::Window: return "window";
    case Culprit::Kind::Flaky: return "flaky";
    case Culprit::Kind::Inconclusive: return "inconclusive";
    case Culprit::Kind::CompilerDecision: return "compiler_decision";
  }
  return "inconclusive";
}

const char* culprit_conclusion_name(Culprit::Conclusion conclusion) {
  switch (conclusion) {
    case Culprit::Conclusion::Named: return "named";
    case Culprit::Conclusion::FlakyBoundary: return "flaky_boundary";
    case Culprit::Conclusion::NoPrefixDiverges: return "no_prefix_diverges";
    case Culprit::Conclusion::BudgetExhausted: return "budget_exhausted";
    case Culprit::Conclusion::BudgetExhaustedLate: return "budget_exhausted_in_phase_2";
    case Culprit::Conclusion::AccumulatedUpstream: return "accumulated_upstream";
    case Culprit::Conclusion::CompilerLost: return "compiler_lost";
    case Culprit::Conclusion::RandomStream: return "random_stream";
    case Culprit::Conclusion::CompilerDecision: return "compiler_decision";
  }
  return "no_prefix_diverges";
}

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::FirstFailingEnd: return "first failing end";
    case Phase::LatestStart: return "latest start";
    case Phase::Recheck: return "recheck";
  }
  return "first failing end";
}

void SearchState::announce(Phase phase) {
  if (!on_step) return;
  const size_t k = result.probes.size() + 1;
  on_step(expected_probes >= k ? fmt::format("{}, probe {} of ~{}", phase_name(phase), k, expected_probes)
                               : fmt::format("{}, probe {}", phase_name(phase), k));
}

ProbeAnswer SearchState::record(ProbeAnswer a, size_t begin, size_t end, Phase phase) {
  Probe p;
  p.phase = phase;
  p.region = oracle.describe(begin, end);
  p.begin = begin;
  p.end = end;
  p.fails = a.fails;
  p.value = a.value;
  p.verdict = a.verdict;
  p.failure = a.failure;
  p.compiled = a.compiled;
  p.seconds = a.seconds;
  p.backend_seconds = a.backend_seconds;
  result.probes.push_back(std::move(p));
  return a;
}

ProbeAnswer SearchState::prefix(size_t end, Phase phase) {
  announce(phase);
  return record(oracle.prefix(end), 0, end, phase);
}

ProbeAnswer SearchState::window(size_t begin, size_t end, Phase phase) {
  announce(phase);
  ProbeAnswer a = record(oracle.window(begin, end), begin, end, phase);
  windows[{begin, end}] = a;
  return a;
}

namespace {

void fill_from(Culprit& c, const ProbeAnswer& a) {
  c.value = a.value;
  c.verdict = a.verdict;
  c.compiled_to_fp64 = a.compiled_to_fp64;
  c.eager_to_fp64 = a.eager_to_fp64;
}

}  // namespace

namespace {

template <class Finish>
Localization localize_phases(SearchState& state, const std::vector<size_t>& suspects, Finish finish) {
  RegionOracle& oracle = state.oracle;
  const LocalizeOptions& options = state.options;
  Localization& result = state.result;
  Culprit& c = result.culprit;
  const size_t k = first_failing_end(state, suspects);
  if (k == 0) {
    c.kind = Culprit::Kind::Inconclusive;
    c.conclusion = state.out_of_budget ? Culprit::Conclusion::BudgetExhausted : Culprit::Conclusion::NoPrefixDiverges;
    c.summary = wording::culprit_summary(c, options.max_compiles);
    return finish();
  }
  if (!transition_is_stable(state, k)) {
    c.kind = Culprit::Kind::Flaky;
    c.conclusion = Culprit::Conclusion::FlakyBoundary;
    oracle.name_nodes(k - 1, k, c);
    c.summary = wording::culprit_summary(c, options.max_compiles);
    return finish();
  }
  // Phase 2 ends at the node that defines the value which failed first (usually c_k itself), unless the prefix
  // ending there passed: then c_k is what makes that value fail (a write after its read), and the window keeps it.
  size_t end = k;
  for (auto it = result.probes.rbegin(); it != result.probes.rend(); ++it)
    if (it->phase == Phase::FirstFailingEnd && it->end == k && it->fails) {
      const size_t pos = oracle.position_of(it->value);
      const bool passed_there = std::any_of(result.probes.begin(), result.probes.end(), [&](const Probe& p) {
        return p.phase == Phase::FirstFailingEnd && p.begin == 0 && p.end == pos + 1 && !p.fails;
      });
      if (pos < k && !passed_there) end = pos + 1;
      break;
    }
  const size_t j = latest_start(state, end);
  auto decisive = state.windows.find({j, end});
  if (j >= end || decisive == state.windows.end() || !decisive->second.fails) {
    c.kind = Culprit::Kind::Inconclusive;
    c.conclusion = state.out_of_budget ? Culprit::Conclusion::BudgetExhaustedLate : Culprit::Conclusion::AccumulatedUpstream;
    oracle.name_nodes(k - 1, k, c);
    c.summary = wording::culprit_summary(c, options.max_compiles);
    return finish();
  }
  oracle.name_nodes(j, end, c);
  fill_from(c, decisive->second);
  c.conclusion = Culprit::Conclusion::Named;
  c.kind = j + 1 == end ? Culprit::Kind::SingleOp : Culprit::Kind::Window;
  c.summary = wording::culprit_summary(c, options.max_compiles);
  if (!suspects.empty()) result.exploded_agrees = suspects.front() >= j && suspects.front() < end;
  return finish();
}

}  // namespace

Localization localize(RegionOracle& oracle, const LocalizeOptions& options, const std::vector<size_t>& suspects,
                      const std::function<void(const std::string&)>& on_step) {
  const auto start = std::chrono::steady_clock::now();
  Localization result;
  const size_t m = oracle.size();
  result.cone_size = m;
  result.budget = 2 * static_cast<size_t>(std::ceil(std::log2(std::max<size_t>(m, 1)))) + 4;
  SearchState state{oracle, options, result, on_step, 0, false, {}};
  state.expected_probes = result.budget + static_cast<size_t>(2 * std::max(options.repeats - 1, 0));
  Culprit& c = result.culprit;
  auto finish = [&] {
    result.compiles = oracle.compiles();
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  };

  try {
    return localize_phases(state, suspects, finish);
  } catch (const OracleLost& e) {
    c = Culprit{};
    c.kind = Culprit::Kind::Inconclusive;
    c.conclusion = Culprit::Conclusion::CompilerLost;
    c.summary = wording::culprit_summary(c, options.max_compiles, e.what());
    return finish();
  }
}

}  // namespace pt2diff
