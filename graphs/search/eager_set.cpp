// graphs/search/eager_set.cpp — the smallest eager set (oracle.h: search_eager_set). A divide and
// conquer over segments of the candidates in graph order, in the manner of Junker's QuickXplain:
// needed(base, cand) is the part of `cand` that must stay eager given that `base` is eager, knowing that
// base + cand passes. If base alone passes nothing of cand is needed; a single candidate is needed;
// otherwise cand is split in two halves A, B and needed(base + B, A) then needed(base + needed-of-A, B)
// decide. Each node of the answer was needed when tried, so the set is irreducible as long as leaving
// more nodes eager never makes the graph fail. A set of k needed nodes out of n costs about
// 2k log2(n / k) questions; answers are remembered, so no set is compiled twice.
#include <algorithm>
#include <fmt/format.h>
#include <iterator>
#include <map>
#include <optional>

#include "graphs/search/oracle.h"

namespace pt2diff {

namespace {

using Set = std::vector<size_t>;  // sorted positions

Set join(const Set& a, const Set& b) {
  Set out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

Set without(const Set& a, const Set& b) {
  Set out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

struct OutOfBudget {};

class Search {
 public:
  Search(EagerSetOracle& oracle, size_t max_compiles, const std::function<void(const std::string&)>& on_step)
      : oracle_(oracle), max_(max_compiles), on_step_(on_step) {
    answers_[{}] = false;  // the verdict: nothing eager fails
  }

  bool passes(const Set& eager) {
    if (auto it = answers_.find(eager); it != answers_.end()) return it->second;
    if (asked_ >= max_) throw OutOfBudget{};
    ++asked_;
    if (on_step_) on_step_(fmt::format("workaround, compile {} (at most {}): {} of {} nodes eager", asked_, max_, eager.size(), oracle_.size()));
    const bool ok = oracle_.passes(eager);
    answers_[eager] = ok;
    if (ok && (!smallest_ || eager.size() < smallest_->size())) smallest_ = eager;
    return ok;
  }

  /// The part of `cand` that must stay eager when `base` is; base + cand is known to pass.
  Set needed(const Set& base, const Set& cand) {
    if (cand.empty() || passes(base)) return {};
    if (cand.size() == 1) return cand;
    const auto half = cand.begin() + static_cast<std::ptrdiff_t>(cand.size() / 2);
    const Set a(cand.begin(), half), b(half, cand.end());
    const Set from_a = needed(join(base, b), a);
    const Set from_b = needed(join(base, from_a), b);
    return join(from_a, from_b);
  }

  size_t asked() const { return asked_; }
  const std::optional<Set>& smallest() const { return smallest_; }

 private:
  EagerSetOracle& oracle_;
  size_t max_;
  const std::function<void(const std::string&)>& on_step_;
  std::map<Set, bool> answers_;
  size_t asked_ = 0;
  std::optional<Set> smallest_;
};

}  // namespace

const char* workaround_conclusion_name(Workaround::Conclusion conclusion) {
  switch (conclusion) {
    case Workaround::Conclusion::Found: return "found";
    case Workaround::Conclusion::NotNeeded: return "not_needed";
    case Workaround::Conclusion::EagerFails: return "eager_fails";
    case Workaround::Conclusion::BudgetExhausted: return "budget_exhausted";
    case Workaround::Conclusion::CompilerLost: return "compiler_lost";
    case Workaround::Conclusion::Unavailable: return "unavailable";
  }
  return "unknown";
}

EagerSetSearch search_eager_set(EagerSetOracle& oracle, const std::vector<size_t>& start, size_t max_compiles,
                                const std::function<void(const std::string&)>& on_step) {
  const size_t n = oracle.size();
  Set all(n);
  for (size_t i = 0; i < n; ++i) all[i] = i;
  Set culprit;
  for (size_t p : start)
    if (p < n) culprit.push_back(p);
  std::sort(culprit.begin(), culprit.end());
  culprit.erase(std::unique(culprit.begin(), culprit.end()), culprit.end());

  Search search(oracle, max_compiles, on_step);
  EagerSetSearch out;
  try {
    Set rest;  // what must be eager besides the culprit
    if (culprit.empty() || !search.passes(culprit)) {
      if (!search.passes(all)) {
        out.conclusion = Workaround::Conclusion::EagerFails;
        out.compiles = search.asked();
        return out;
      }
      rest = search.needed(culprit, without(all, culprit));
    }
    // Then the culprit itself shrinks (a window may not need every node; what else is eager may cover it).
    const Set core = search.needed(rest, culprit);
    out.eager = join(rest, core);
    out.minimal = true;
    out.conclusion = Workaround::Conclusion::Found;
  } catch (const OutOfBudget&) {
    if (search.smallest()) {
      out.eager = *search.smallest();
      out.conclusion = Workaround::Conclusion::Found;
    } else {
      out.conclusion = Workaround::Conclusion::BudgetExhausted;
    }
  }
  out.compiles = search.asked();
  return out;
}

}  // namespace pt2diff
