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
#include "pt2diff/error.h"

namespace pt2diff {

namespace {

class CompiledOracle final : public RegionOracle {
 public:
  CompiledOracle(const Program& program, Backend& backend, const Interpreter& interpreter, const ReferenceRuns& refs,
                 std::vector<NodeId> cone, std::set<ValueId> uncomparable, const ToleranceRule& rule, bool suspicious_fails)
      : g_(program.ir.graph), backend_(backend), interpreter_(interpreter), refs_(refs), cone_(std::move(cone)),
        uncomparable_(std::move(uncomparable)), rule_(rule), suspicious_fails_(suspicious_fails) {
    for (size_t i = 0; i < cone_.size(); ++i) position_[cone_[i]] = i;
    if (refs_.storage && refs_.storage->any()) {
      storage_ = refs_.storage;
      before_of_.resize(g_.nodes().size());
      for (size_t n = 0; n < storage_->after.size(); ++n)
        for (NodeId a : storage_->after[n]) before_of_[static_cast<size_t>(a)].push_back(static_cast<NodeId>(n));
    }
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
      c.sources.push_back(n.source.origin());
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
    add_written_inputs(region);  // a graph input the prefix writes: judged as the prefix leaves it
    std::vector<c10::IValue> given;
    for (ValueId v : region.inputs) given.push_back(refs_.eager[static_cast<size_t>(v)]);
    return ask({'p', 0, end}, region, std::move(given), [&](const std::vector<c10::IValue>&) {
      std::vector<c10::IValue> eager;
      for (ValueId v : region.outputs) eager.push_back(refs_.region_eager(region, v));
      return eager;
    });
  }

  ProbeAnswer window(size_t begin, size_t end) override {
    std::vector<NodeId> nodes = window_nodes(begin, end);
    std::vector<ValueId> judged = g_.node(cone_[end - 1]).output_values();
    if (storage_)  // a value read before a write of the window: judged too (a write after a read)
      for (ValueId v : read_before_written(g_, *storage_, nodes))
        if (std::find(judged.begin(), judged.end(), v) == judged.end()) judged.push_back(v);
    RegionSpec region = RegionSpec::fused(g_, nodes, judged);
    add_written_inputs(region);  // an input the window writes in place: judged as the window leaves it
    return ask({'w', begin, end}, region, refs_.region_inputs(region), [&](const std::vector<c10::IValue>& inputs) {
      return interpreter_.run_region(region, inputs);  // eager from the same boundary values
    });
  }

 private:
  /// The nodes of [begin, end) that the last one depends on (and it): a window is one computation. Where the
  /// graph writes in place, a write the window's reads see and a read its writes follow are dependencies too, and
  /// the views through which a window reads a storage it writes are made inside it from one input (fed apart, the
  /// views would no longer share the write).
  std::vector<NodeId> window_nodes(size_t begin, size_t end) const {
    if (begin >= end) return {};
    std::vector<NodeId> nodes{cone_[end - 1]};
    std::set<NodeId> needed{cone_[end - 1]};
    for (size_t i = end - 1; i-- > begin;) {
      NodeId id = cone_[i];
      bool feeds = false;
      for (ValueId v : g_.node(id).output_values())
        for (NodeId u : g_.value(v).users) feeds = feeds || needed.count(u);
      if (storage_)
        for (NodeId u : before_of_[static_cast<size_t>(id)]) feeds = feeds || needed.count(u);
      if (feeds) {
        needed.insert(id);
        nodes.push_back(id);
      }
    }
    std::sort(nodes.begin(), nodes.end());
    if (storage_) close_views(nodes, begin);
    return nodes;
  }

  /// Adds to `nodes` the views (of the cone, from position `begin` on) through which they read a storage they write
  /// in place, until each such storage enters the window as one value.
  void close_views(std::vector<NodeId>& nodes, size_t begin) const {
    for (bool grew = true; grew;) {
      grew = false;
      std::set<ValueId> written;
      for (NodeId id : nodes)
        for (ValueId r : storage_->writes[static_cast<size_t>(id)]) written.insert(r);
      const RegionSpec region = RegionSpec::fused(g_, nodes, {});
      std::map<ValueId, std::vector<ValueId>> entering;  // root -> the inputs of that storage
      for (ValueId v : region.inputs)
        if (const ValueId r = storage_->root[static_cast<size_t>(v)]; written.count(r)) entering[r].push_back(v);
      for (const auto& [r, values] : entering) {
        if (values.size() < 2) continue;
        for (ValueId v : values) {
          const NodeId p = g_.value(v).producer;
          auto at = position_.find(p);
          if (p == kGraphInput || at == position_.end() || at->second < begin) continue;
          if (storage_->root[static_cast<size_t>(v)] == v) continue;  // the storage itself: the views are made from it
          nodes.push_back(p);
          grew = true;
        }
      }
      std::sort(nodes.begin(), nodes.end());
      nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    }
  }

  /// Appends to `region.outputs` each of its inputs whose storage the region writes in place: the value after the
  /// region is a result (what torch.compile must write back).
  void add_written_inputs(RegionSpec& region) const {
    if (!storage_) return;
    for (ValueId v : written_region_inputs(*storage_, region))
      if (std::find(region.outputs.begin(), region.outputs.end(), v) == region.outputs.end()) region.outputs.push_back(v);
  }

  template <class EagerFn>
  ProbeAnswer ask(std::tuple<char, size_t, size_t> key, const RegionSpec& region, std::vector<c10::IValue> inputs, EagerFn eager_of) {
    const auto start = std::chrono::steady_clock::now();
    ProbeAnswer a;
    std::vector<c10::IValue> compiled;
    const auto backend_start = std::chrono::steady_clock::now();
    try {
      auto it = compiled_.find(key);
      if (it == compiled_.end()) {
        ++compiles_;
        a.compiled = true;
        it = compiled_.emplace(key, backend_.compile(region, protect(region, inputs))).first;
      }
      compiled = it->second->run(protect(region, inputs));
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
      const c10::IValue fp64 = refs_.region_fp64(region, v);
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

  /// `inputs`, with a copy of each the region writes in place: a compiler running in this process writes into
  /// what it is given, and the eager run and the next probe read them after.
  std::vector<c10::IValue> protect(const RegionSpec& region, const std::vector<c10::IValue>& inputs) const {
    if (!storage_) return inputs;
    std::set<ValueId> written;
    for (NodeId id : region.nodes)
      for (ValueId r : storage_->writes[static_cast<size_t>(id)]) written.insert(r);
    std::vector<c10::IValue> out = inputs;
    for (size_t i = 0; i < out.size(); ++i)
      if (written.count(storage_->root[static_cast<size_t>(region.inputs[i])]) && out[i].isTensor())
        out[i] = out[i].toTensor().clone();
    return out;
  }

  const Graph& g_;
  const StorageModel* storage_ = nullptr;      ///< where the graph writes in place; null when nothing does
  std::vector<std::vector<NodeId>> before_of_;  ///< by NodeId: the nodes whose effect edges point back at it
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

c10::IValue ReferenceRuns::fp64_of(ValueId value) const {
  const auto i = static_cast<size_t>(value);
  if (i >= dropped.size() || !dropped[i]) return fp64.at(i);
  const Value& v = graph->value(value);
  const std::vector<ValueId> outs = graph->node(v.producer).output_values();
  std::vector<c10::IValue> made = rerun(v.producer, [this](ValueId in) {
    return graph->value(in).producer == kGraphInput ? eager.at(static_cast<size_t>(in)) : fp64_of(in);
  });
  return made.at(static_cast<size_t>(std::find(outs.begin(), outs.end(), value) - outs.begin()));
}

namespace {

c10::IValue view_in(const at::Tensor& flat, const std::optional<ReferenceRuns::Geometry>& g, const Graph& graph, ValueId v) {
  if (!g) throw Error(Error::Kind::Internal, fmt::format("no geometry kept for '{}', a value of a storage written in place", graph.value(v).name));
  return flat.as_strided(g->sizes, g->strides, g->offset);
}

/// The first node of `region` reading `v` (its first node when none does: an output it passes through).
NodeId first_reader(const Graph& g, const RegionSpec& region, ValueId v) {
  for (NodeId id : region.nodes) {
    const std::vector<ValueId> ins = g.node(id).input_values();
    if (std::find(ins.begin(), ins.end(), v) != ins.end()) return id;
  }
  return region.nodes.empty() ? static_cast<NodeId>(g.nodes().size()) : region.nodes.front();
}

/// The last node of `region` writing `v`'s storage after `v` was made (an input: any), if one does.
std::optional<NodeId> last_region_write(const Graph& g, const StorageModel& m, const RegionSpec& region, ValueId v) {
  const ValueId r = m.root[static_cast<size_t>(v)];
  const NodeId made = g.value(v).producer;
  std::optional<NodeId> last;
  for (NodeId id : region.nodes) {
    const auto& w = m.writes[static_cast<size_t>(id)];
    if ((made == kGraphInput || id > made) && std::find(w.begin(), w.end(), r) != w.end()) last = id;
  }
  return last;
}

bool is_input(const RegionSpec& region, ValueId v) { return std::find(region.inputs.begin(), region.inputs.end(), v) != region.inputs.end(); }

}  // namespace

std::optional<NodeId> ReferenceRuns::write_seen(ValueId value, NodeId reader) const {
  if (!storage || !graph || storage->writers.empty()) return std::nullopt;
  return storage->write_seen(*graph, value, reader);
}

c10::IValue ReferenceRuns::eager_after(ValueId value, NodeId writer) const {
  auto it = versions.find({writer, storage->root[static_cast<size_t>(value)]});
  if (it == versions.end())
    throw Error(Error::Kind::Internal, fmt::format("no version of '{}' kept after node '{}'", graph->value(value).name, graph->node(writer).name));
  return view_in(it->second.eager, eager_geometry.at(static_cast<size_t>(value)), *graph, value);
}

c10::IValue ReferenceRuns::fp64_after(ValueId value, NodeId writer) const {
  auto it = versions.find({writer, storage->root[static_cast<size_t>(value)]});
  if (it == versions.end())
    throw Error(Error::Kind::Internal, fmt::format("no version of '{}' kept after node '{}'", graph->value(value).name, graph->node(writer).name));
  return view_in(it->second.fp64, fp64_geometry.at(static_cast<size_t>(value)), *graph, value);
}

c10::IValue ReferenceRuns::eager_as_read(ValueId value, NodeId reader) const {
  const std::optional<NodeId> w = write_seen(value, reader);
  return w ? eager_after(value, *w) : eager.at(static_cast<size_t>(value));
}

c10::IValue ReferenceRuns::fp64_as_read(ValueId value, NodeId reader) const {
  const std::optional<NodeId> w = write_seen(value, reader);
  return w ? fp64_after(value, *w) : fp64_of(value);
}

std::vector<c10::IValue> ReferenceRuns::region_inputs(const RegionSpec& region) const {
  std::vector<c10::IValue> out = rounded(region.inputs);
  if (!storage || storage->writers.empty()) return out;
  for (size_t i = 0; i < region.inputs.size(); ++i) {
    const ValueId v = region.inputs[i];
    const std::optional<NodeId> w = write_seen(v, first_reader(*graph, region, v));
    if (!w) continue;
    const c10::IValue fp = fp64_after(v, *w), native = eager_after(v, *w);
    out[i] = fp.toTensor().to(native.toTensor().scalar_type(), /*non_blocking=*/false, /*copy=*/true);
  }
  return out;
}

c10::IValue ReferenceRuns::region_fp64(const RegionSpec& region, ValueId value) const {
  if (!storage || storage->writers.empty()) return fp64_of(value);
  if (const std::optional<NodeId> w = last_region_write(*graph, *storage, region, value)) return fp64_after(value, *w);
  if (is_input(region, value)) return fp64_as_read(value, first_reader(*graph, region, value));
  return fp64_of(value);
}

c10::IValue ReferenceRuns::region_eager(const RegionSpec& region, ValueId value) const {
  if (!storage || storage->writers.empty()) return eager.at(static_cast<size_t>(value));
  if (const std::optional<NodeId> w = last_region_write(*graph, *storage, region, value)) return eager_after(value, *w);
  if (is_input(region, value)) return eager_as_read(value, first_reader(*graph, region, value));
  return eager.at(static_cast<size_t>(value));
}

std::vector<c10::IValue> ReferenceRuns::rounded(const std::vector<ValueId>& values) const {
  auto is_dropped = [&](ValueId v) { return static_cast<size_t>(v) < dropped.size() && dropped[static_cast<size_t>(v)]; };
  // A value's fp64 tensor and the dtype it rounds to; undefined when the value is its eager value (no fp64
  // tensor: a graph input, a symbol) or the fp64 run's own (same dtype: integers, float8). A dropped value is
  // made again one at a time below, rounded alone, and let go.
  auto rounding = [&](ValueId v) -> std::pair<at::Tensor, at::ScalarType> {
    if (is_dropped(v)) return {};
    const c10::IValue& ref = fp64[static_cast<size_t>(v)];
    const c10::IValue& native = eager[static_cast<size_t>(v)];
    if (!ref.isTensor() || !native.isTensor() || !ref.toTensor().defined() || !native.toTensor().defined()) return {};
    return {ref.toTensor(), native.toTensor().scalar_type()};
  };
  // A storage is rounded whole, once per dtype, and each value is its view of that, where the views asked
  // cover at least half of it; a small slice of a large tensor is rounded alone.
  using Key = std::pair<const void*, at::ScalarType>;
  auto shareable = [&](const at::Tensor& t) {
    return !separate && t.layout() == at::kStrided && t.has_storage() && t.storage().data() != nullptr && !t.is_conj() &&
           !t.is_neg() && t.storage().nbytes() % t.element_size() == 0;
  };
  std::map<Key, int64_t> widest;  // the most elements a view of the storage asks
  for (ValueId v : values)
    if (auto [t, dtype] = rounding(v); t.defined() && t.scalar_type() != dtype && shareable(t))
      widest[{t.storage().data(), dtype}] = std::max(widest[{t.storage().data(), dtype}], t.numel());
  std::map<Key, at::Tensor> whole;
  std::vector<c10::IValue> out;
  out.reserve(values.size());
  for (ValueId v : values) {
    auto [t, dtype] = rounding(v);
    if (is_dropped(v)) {
      const c10::IValue made = fp64_of(v);
      const c10::IValue& native = eager[static_cast<size_t>(v)];
      out.push_back(made.isTensor() && native.isTensor() ? c10::IValue(made.toTensor().to(native.toTensor().scalar_type())) : native);
    } else if (!t.defined()) {
      out.push_back(eager[static_cast<size_t>(v)]);
    } else if (t.scalar_type() == dtype) {
      out.push_back(separate ? t.clone() : t);
    } else if (!shareable(t) || 2 * widest.at({t.storage().data(), dtype}) < static_cast<int64_t>(t.storage().nbytes() / t.element_size())) {
      out.push_back(t.to(dtype));
    } else {
      const c10::Storage& storage = t.storage();
      at::Tensor& flat = whole[{storage.data(), dtype}];
      if (!flat.defined())
        flat = t.new_empty({0}).set_(storage, 0, {static_cast<int64_t>(storage.nbytes() / t.element_size())}, {1}).to(dtype);
      out.push_back(flat.as_strided(t.sizes(), t.strides(), t.storage_offset()));
    }
  }
  return out;
}

std::unique_ptr<RegionOracle> make_compiled_oracle(const Program& program, Backend& backend, const Interpreter& interpreter,
                                                   const ReferenceRuns& refs, std::vector<NodeId> cone,
                                                   std::set<ValueId> uncomparable, const ToleranceRule& rule, bool suspicious_fails) {
  return std::make_unique<CompiledOracle>(program, backend, interpreter, refs, std::move(cone), std::move(uncomparable), rule,
                                          suspicious_fails);
}

}  // namespace pt2diff
