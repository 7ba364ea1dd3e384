// graphs/search/compiler_search.cpp — the compiler search: subsystem, then bisection over its decisions, then
// verification of the one decision alone (compiler_search.h).
#include "graphs/search/compiler_search.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>

#include "graphs/search/oracle.h"

namespace pt2diff {

const char* compiler_search_conclusion_name(CompilerSearch::Conclusion c) {
  switch (c) {
    case CompilerSearch::Conclusion::Found: return "found";
    case CompilerSearch::Conclusion::NotReproduced: return "not_reproduced";
    case CompilerSearch::Conclusion::NoSubsystem: return "no_subsystem";
    case CompilerSearch::Conclusion::BudgetExhausted: return "budget_exhausted";
    case CompilerSearch::Conclusion::CompilerLost: return "compiler_lost";
    case CompilerSearch::Conclusion::Unavailable: return "unavailable";
  }
  return "unavailable";
}

const std::vector<std::string>& compiler_subsystems() {
  static const std::vector<std::string> all = {"post_grad_passes", "fusions", "lowerings", "joint_graph_passes", "pre_grad_passes"};
  return all;
}

namespace {

size_t count_of(const DecisionRun& r, const std::string& subsystem) {
  return static_cast<size_t>(std::count_if(r.decisions.begin(), r.decisions.end(),
                                           [&](const CompilerDecision& d) { return d.subsystem == subsystem; }));
}

std::optional<CompilerDecision> decision_at(const DecisionRun& r, const std::string& subsystem, size_t index) {
  for (const CompilerDecision& d : r.decisions)
    if (d.subsystem == subsystem && d.index == index) return d;
  return std::nullopt;
}

}  // namespace

CompilerSearch search_compiler(const DecisionOracle& ask, size_t max_compiles, const std::function<void(const std::string&)>& on_step) {
  CompilerSearch out;
  auto step = [&](const DecisionFilter& off, const std::string& label) {
    if (on_step) on_step("compiler search: " + label);
    DecisionRun r = ask(off);
    ++out.compiles;
    out.steps.push_back({off, r.passes, r.detail, count_of(r, off.subsystem), r.seconds});
    return r;
  };
  try {
    // The whole graph as compiled, its decisions recorded (the caches off): it must still fail.
    const DecisionRun base = step({}, "recording the compiler's decisions");
    if (base.passes) {
      out.conclusion = CompilerSearch::Conclusion::NotReproduced;
      return out;
    }
    std::string subsystem;
    for (const std::string& sub : compiler_subsystems()) {
      if (count_of(base, sub) == 0) continue;
      if (out.compiles >= max_compiles) {
        out.conclusion = CompilerSearch::Conclusion::BudgetExhausted;
        return out;
      }
      if (step({sub, 0, {}, {}}, sub + " all off").passes) {
        subsystem = sub;
        break;
      }
    }
    if (subsystem.empty()) {
      out.conclusion = CompilerSearch::Conclusion::NoSubsystem;
      return out;
    }
    // Invariant: keeping the first `lo` decisions passes, keeping the first `hi` fails (hi = all: the base run).
    size_t lo = 0, hi = count_of(base, subsystem);
    DecisionRun at_hi = base;
    while (hi - lo > 1) {
      if (out.compiles >= max_compiles) {
        out.conclusion = CompilerSearch::Conclusion::BudgetExhausted;
        return out;
      }
      const size_t mid = lo + (hi - lo) / 2;
      DecisionRun r = step({subsystem, static_cast<long>(mid), {}, {}}, fmt::format("{} {} of {} kept", subsystem, mid, count_of(base, subsystem)));
      if (r.passes) {
        lo = mid;
      } else {
        hi = mid;
        at_hi = std::move(r);
      }
    }
    // Decision `lo` is the one whose keeping makes the graph fail: named as the compile that kept it last saw it.
    out.decision = decision_at(at_hi, subsystem, lo);
    if (!out.decision) out.decision = CompilerDecision{subsystem, lo, fmt::format("{} decision #{}", subsystem, lo), {}};
    out.conclusion = CompilerSearch::Conclusion::Found;
    // Verified: every other decision kept, this one alone off.
    const DecisionRun v = step({subsystem, -1, {lo}, {out.decision->what}}, "verifying: " + out.decision->what + " alone off");
    out.verified = v.passes;
    out.verification = v.passes ? "the whole graph compiled without it alone passes the rule"
                                : "the whole graph compiled without it alone still fails (" + v.detail +
                                      "): another decision of " + subsystem + " makes it diverge too";
  } catch (const OracleLost& lost) {
    out.conclusion = CompilerSearch::Conclusion::CompilerLost;
    out.verification = lost.what();
  }
  return out;
}

}  // namespace pt2diff
