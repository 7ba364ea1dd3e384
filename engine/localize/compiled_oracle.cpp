// engine/localize/compiled_oracle.cpp — a probe is a region compiled by the backend, run, and judged
// value by value with the verdict rule: compiled vs eager with fp64 as referee. Prefixes run from the
// graph inputs against the eager run; windows run from fp64-exact boundary values against the eager
// run of the same window from the same values (in-process), so the rule compares like with like.
#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <map>
#include <tuple>
#include <unordered_map>

#include "engine/localize/compiled_oracle.h"
#include "graphs/graph_text.h"

namespace pt2diff {

namespace {

class CompiledOracle final : public RegionOracle {
 public:
  CompiledOracle(const Program& program, Backend& backend, const Interpreter& interpreter, const ReferenceRuns& refs,
                 std::vector<NodeId> cone, std::set<ValueId> uncomparable, const ToleranceRule& rule, bool suspicious_fails)
      : g_(program.ir.graph), backend_(backend), interpreter_(interpreter), refs_(refs), cone_(std::move(cone)),
        uncomparable_(std::move(uncomparable)), rule_(rule), suspicious_fails_(suspicious_fails) {
    for (size_t i = 0; i < cone_.size(); ++i) position_[cone_[i]] = i;
  }

  size_t size() const override { return cone_.size(); }
  size_t compiles() const override { return compiles_; }

  std::string describe(size_t begin, size_t end) const override {
    if (begin >= end) return "empty";
    return fmt::format("c{}..c{}: {} node{}, {} .. {}", begin + 1, end, end - begin, end - begin == 1 ? "" : "s",
                       g_.node(cone_[begin]).name, g_.node(cone_[end - 1]).name);
  }

  size_t position_of(const std::string& value) const override {
    ValueId v = g_.find(value);
    if (v == kNoValue) return cone_.size();
    auto it = position_.find(g_.value(v).producer);
    return it == position_.end() ? cone_.size() : it->second;
  }

  void name_nodes(size_t begin, size_t end, Culprit& c) const override {
    for (NodeId id : window_nodes(begin, end)) {
      const Node& n = g_.node(id);
      c.nodes.push_back(n.name);
      c.ops.push_back(short_target(n.target));
      c.sources.push_back(n.source.user_frame());
      c.module_paths.push_back(n.source.module_path());
    }
  }

  ProbeAnswer prefix(size_t end) override {
    std::vector<NodeId> nodes(cone_.begin(), cone_.begin() + static_cast<std::ptrdiff_t>(end));
    // Judged: every value the prefix passes on to the rest of the cone or to the graph's outputs.
    std::vector<ValueId> judged;
    for (NodeId id : nodes)
      for (ValueId v : g_.node(id).output_values()) {
        const Value& value = g_.value(v);
        bool passed_on = value.is_graph_output || id == nodes.back();
        for (NodeId u : value.users) {
          auto it = position_.find(u);
          passed_on = passed_on || (it != position_.end() && it->second >= end);
        }
        if (passed_on) judged.push_back(v);
      }
    RegionSpec region = RegionSpec::fused(g_, nodes, judged);
    return ask({'p', 0, end}, region, refs_.eager, [&](const std::vector<c10::IValue>&) {
      std::vector<c10::IValue> eager;
      for (ValueId v : judged) eager.push_back(refs_.eager[static_cast<size_t>(v)]);
      return eager;
    });
  }

  ProbeAnswer window(size_t begin, size_t end) override {
    std::vector<NodeId> nodes = window_nodes(begin, end);
    std::vector<ValueId> judged = g_.node(cone_[end - 1]).output_values();
    RegionSpec region = RegionSpec::fused(g_, nodes, judged);
    return ask({'w', begin, end}, region, refs_.rounded, [&](const std::vector<c10::IValue>& inputs) {
      return interpreter_.run_region(region, inputs);  // eager from the same boundary values
    });
  }

 private:
  /// The nodes of [begin, end) that the last one depends on (and it): a window is one computation.
  std::vector<NodeId> window_nodes(size_t begin, size_t end) const {
    if (begin >= end) return {};
    std::vector<NodeId> nodes{cone_[end - 1]};
    std::set<NodeId> needed{cone_[end - 1]};
    for (size_t i = end - 1; i-- > begin;) {
      NodeId id = cone_[i];
      bool feeds = false;
      for (ValueId v : g_.node(id).output_values())
        for (NodeId u : g_.value(v).users) feeds = feeds || needed.count(u);
      if (feeds) {
        needed.insert(id);
        nodes.push_back(id);
      }
    }
    std::sort(nodes.begin(), nodes.end());
    return nodes;
  }

  template <class EagerFn>
  ProbeAnswer ask(std::tuple<char, size_t, size_t> key, const RegionSpec& region, const std::vector<c10::IValue>& source, EagerFn eager_of) {
    const auto start = std::chrono::steady_clock::now();
    ProbeAnswer a;
    std::vector<c10::IValue> inputs;
    for (ValueId v : region.inputs) inputs.push_back(source[static_cast<size_t>(v)]);
    std::vector<c10::IValue> compiled;
    const auto backend_start = std::chrono::steady_clock::now();
    try {
      auto it = compiled_.find(key);
      if (it == compiled_.end()) {
        ++compiles_;
        a.compiled = true;
        it = compiled_.emplace(key, backend_.compile(region, inputs)).first;
      }
      compiled = it->second->run(inputs);
      a.backend_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - backend_start).count();
    } catch (const BackendFailure& f) {
      if (f.kind() == BackendFailure::Kind::WorkerDied || f.kind() == BackendFailure::Kind::TimedOut)
        throw OracleLost(f.what());
      a.fails = true;  // a region the compiler cannot compile or run is a failing region
      a.failure = f.kind();
      a.verdict.reason = f.kind_name();
      a.verdict.detail = f.what();
      a.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return a;
    }
    const std::vector<c10::IValue> eager = eager_of(inputs);
    double closest = -1;
    for (size_t i = 0; i < region.outputs.size(); ++i) {
      const ValueId v = region.outputs[i];
      const c10::IValue& fp64 = refs_.fp64[static_cast<size_t>(v)];
      if (uncomparable_.count(v) || !compiled[i].isTensor() || !eager[i].isTensor() || !fp64.isTensor()) continue;
      Verdict verdict = judge(compiled[i].toTensor(), eager[i].toTensor(), fp64.toTensor(), rule_);
      const bool fails = counts_as_failing(verdict, suspicious_fails_);
      // The earliest failing value decides (phase 2 ends at its producer); else the closest to failing.
      const double margin = verdict.bound > 0 ? verdict.rmse_result / verdict.bound : 0;
      if ((fails && !a.fails) || (!a.fails && !fails && margin > closest)) {
        a.fails = fails;
        a.value = g_.value(v).name;
        a.verdict = verdict;
        a.compiled_to_fp64 = measure(compiled[i].toTensor(), fp64.toTensor());
        a.eager_to_fp64 = measure(eager[i].toTensor(), fp64.toTensor());
        closest = margin;
      }
    }
    a.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return a;
  }

  const Graph& g_;
  Backend& backend_;
  const Interpreter& interpreter_;
  const ReferenceRuns& refs_;
  std::vector<NodeId> cone_;
  std::set<ValueId> uncomparable_;
  ToleranceRule rule_;
  bool suspicious_fails_ = false;
  std::unordered_map<NodeId, size_t> position_;
  std::map<std::tuple<char, size_t, size_t>, std::unique_ptr<CompiledRegion>> compiled_;  ///< ('p'refix|'w'indow, begin, end)
  size_t compiles_ = 0;
};

}  // namespace

std::unique_ptr<RegionOracle> make_compiled_oracle(const Program& program, Backend& backend, const Interpreter& interpreter,
                                                   const ReferenceRuns& refs, std::vector<NodeId> cone,
                                                   std::set<ValueId> uncomparable, const ToleranceRule& rule, bool suspicious_fails) {
  return std::make_unique<CompiledOracle>(program, backend, interpreter, refs, std::move(cone), std::move(uncomparable), rule,
                                          suspicious_fails);
}

}  // namespace pt2diff
