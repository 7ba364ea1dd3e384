// engine/sweep/sizes.cpp — size sweeps (pt2diff/sizes.h): the dims a graph was exported dynamic, each run at a
// set of sizes through one backend that compiles every region once, judged per size, the smallest failing size
// localized.
#include "pt2diff/sizes.h"

#include <ATen/ops/arange.h>
#include <ATen/ops/index_select.h>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fmt/format.h>
#include <functional>
#include <map>
#include <set>

#include "engine/backends/backends.h"
#include "engine/sweep/run_summary.h"
#include "pt2diff/advanced/backend.h"
#include "pt2diff/error.h"
#include "pt2diff/inputs.h"
#include "pt2diff/program.h"

namespace pt2diff {

namespace {

double elapsed_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// The graph input value of a bound entry, when it is a tensor input with metadata.
const Value* tensor_input(const Program& p, const BoundInputs::Entry& e) {
  const InputSpec& spec = p.ir.input_specs.at(e.spec_index);
  if (spec.kind == InputSpec::Kind::ConstantInput || spec.arg.kind != Argument::Kind::Tensor) return nullptr;
  const Value& v = p.ir.graph.value(spec.arg.as<ValueId>());
  return v.meta ? &v : nullptr;
}

/// Each dynamic symbol of the bound inputs' dims, with the first "x.size(0)" that carries it.
std::map<std::string, std::string> input_symbols(const Program& p, const BoundInputs& in) {
  std::map<std::string, std::string> out;
  for (const BoundInputs::Entry& e : in.entries)
    if (const Value* v = tensor_input(p, e))
      for (size_t d = 0; d < v->meta->sizes.size(); ++d) {
        const std::string& expr = v->meta->sizes[d].expr;
        if (!expr.empty() && in.symbols.count(expr)) out.emplace(expr, fmt::format("{}.size({})", e.name, d));
      }
  return out;
}

std::string range_text(const Program& p, const std::string& symbol) {
  auto r = p.ir.range_constraints.find(symbol);
  if (r == p.ir.range_constraints.end()) return "[?, inf]";
  return fmt::format("[{}, {}]", r->second.min ? std::to_string(*r->second.min) : "0",
                     r->second.max ? std::to_string(*r->second.max) : "inf");
}

/// The symbol a --dim names ("s77", or "x.size(0)"), or why it cannot be swept.
std::pair<std::string, std::string> resolve_dim(const Program& p, const BoundInputs& in, const std::string& name,
                                                const std::map<std::string, std::string>& symbols) {
  std::string known;
  for (const auto& [sym, where] : symbols) known += fmt::format("{}{} ({})", known.empty() ? "" : ", ", sym, where);
  if (known.empty()) known = "none";
  if (symbols.count(name)) return {name, ""};
  const auto open = name.find(".size(");
  if (open != std::string::npos && name.back() == ')') {
    const std::string input = name.substr(0, open);
    const std::string dim_text = name.substr(open + 6, name.size() - open - 7);
    for (const BoundInputs::Entry& e : in.entries) {
      if (e.name != input) continue;
      const Value* v = tensor_input(p, e);
      char* end = nullptr;
      const long d = std::strtol(dim_text.c_str(), &end, 10);
      if (!v || end == dim_text.c_str() || *end || d < 0 || static_cast<size_t>(d) >= v->meta->sizes.size())
        return {"", fmt::format("--dim {}: input '{}' has no dim {} (the graph's dynamic dims: {})", name, input, dim_text, known)};
      const SymInt& s = v->meta->sizes[static_cast<size_t>(d)];
      if (s.is_static())
        return {"", fmt::format("--dim {}: that dim is static ({}) in the archive: re-export with a dynamic dim (torch.export.Dim) "
                                "to vary it (the graph's dynamic dims: {})", name, *s.value, known)};
      if (!symbols.count(s.expr))
        return {"", fmt::format("--dim {}: that dim is {}, derived from other symbols: sweep those (the graph's dynamic dims: {})",
                                name, s.expr, known)};
      return {s.expr, ""};
    }
    return {"", fmt::format("--dim {}: the graph has no input '{}' (the graph's dynamic dims: {})", name, input, known)};
  }
  return {"", fmt::format("--dim {}: not a dynamic dim of the graph's inputs (the graph's dynamic dims: {})", name, known)};
}

/// The sum of the recompiles the run's compiled regions report (cumulative: regions are shared between sizes).
int64_t recompiles_so_far(const DiffResult& r) {
  int64_t n = 0;
  for (const CompileRecord& c : r.compiles)
    if (c.shapes) n += c.shapes->recompiles;
  return n;
}

}  // namespace

SizeDim parse_size_dim(const std::string& spec) {
  SizeDim d;
  const auto eq = spec.find('=');
  d.name = spec.substr(0, eq);
  if (d.name.empty()) throw Error(Error::Kind::Usage, fmt::format("--dim '{}': expected SYMBOL=N,N,... or INPUT.size(D)=N,N,...", spec));
  if (eq == std::string::npos) return d;
  std::string rest = spec.substr(eq + 1);
  size_t at = 0;
  while (at <= rest.size()) {
    const size_t comma = std::min(rest.find(',', at), rest.size());
    const std::string item = rest.substr(at, comma - at);
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end || v < 0)
      throw Error(Error::Kind::Usage, fmt::format("--dim '{}': '{}' is not a size (a non-negative integer)", spec, item));
    d.sizes.push_back(v);
    at = comma + 1;
  }
  std::sort(d.sizes.begin(), d.sizes.end());
  d.sizes.erase(std::unique(d.sizes.begin(), d.sizes.end()), d.sizes.end());
  return d;
}

std::vector<int64_t> default_sizes(int64_t min, std::optional<int64_t> max) {
  const int64_t hi = max.value_or(4096);
  std::set<int64_t> s = {min, hi, 1, 3, 5, 7, 11, 13};
  for (int64_t p = 2; p <= hi * 2 && p > 0; p *= 2) s.insert({p - 1, p, p + 1});
  std::vector<int64_t> out;
  for (int64_t v : s)
    if (v >= min && v <= hi) out.push_back(v);
  return out;
}

BoundInputs resize_inputs(const Program& program, const BoundInputs& inputs, const std::string& symbol, int64_t size) {
  UserInputs user;
  user.origin = fmt::format("{} at {}={}", inputs.origin, symbol, size);
  for (const BoundInputs::Entry& e : inputs.entries) {
    InputValue value = e.value;
    const Value* v = tensor_input(program, e);
    if (v && std::holds_alternative<at::Tensor>(value)) {
      at::Tensor t = std::get<at::Tensor>(value);
      for (size_t d = 0; d < v->meta->sizes.size(); ++d) {
        if (v->meta->sizes[d].expr != symbol) continue;
        const int64_t have = t.size(static_cast<int64_t>(d));
        if (have == 0 && size > 0)
          throw Error(Error::Kind::BadInputs, fmt::format("input '{}' dim {} is empty in the given inputs: nothing to repeat up to "
                                                          "size {} (give inputs with that dim at least 1)", e.name, d, size));
        // Cut to `size`, or repeated cyclically past the given size: the values stay the user's.
        at::Tensor index = at::arange(size, at::TensorOptions().dtype(at::kLong).device(t.device()));
        if (have > 0) index = index.remainder(have);
        t = at::index_select(t, static_cast<int64_t>(d), index);
      }
      value = t;
    }
    user.kwargs.emplace_back(e.name, std::move(value));
  }
  return bind_inputs(program, user);
}

namespace {

/// The order sizes run in: the first compiles, so the given inputs' size first when swept, else the nearest size of at
/// least 2 (Dynamo specializes sizes 0 and 1 whatever is marked, so a compile there would be a static one).
std::vector<int64_t> run_order(std::vector<int64_t> sizes, int64_t given) {
  std::stable_sort(sizes.begin(), sizes.end(), [&](int64_t a, int64_t b) {
    auto key = [&](int64_t v) { return std::make_pair(v < 2, std::llabs(v - given)); };
    return key(a) < key(b);
  });
  return sizes;
}

/// The sentence of a static-against-dynamic comparison.
std::string static_check_summary(const StaticCheck& c) {
  auto lv = [](Level l) { return std::string(level_name(l)); };
  if (!c.differ)
    return fmt::format("static and dynamic compiles agree at {}={}: both {} (worst output ratio {:.3g}x static, {:.3g}x dynamic)",
                       c.symbol, c.size, lv(c.static_level), c.static_ratio, c.dynamic_ratio);
  if (c.static_level < c.dynamic_level)
    return fmt::format("the dynamic compile is wrong where the static one is not at {}={}: dynamic {} (worst output ratio "
                       "{:.3g}x, node {:.3g}x), static {} ({:.3g}x, node {:.3g}x): the bug is in code for symbolic sizes; "
                       "--static avoids it", c.symbol, c.size, lv(c.dynamic_level), c.dynamic_ratio, c.dynamic_node_ratio,
                       lv(c.static_level), c.static_ratio, c.static_node_ratio);
  return fmt::format("the static compile is wrong where the dynamic one is not at {}={}: static {} (worst output ratio "
                     "{:.3g}x), dynamic {} ({:.3g}x)", c.symbol, c.size, lv(c.static_level), c.static_ratio,
                     lv(c.dynamic_level), c.dynamic_ratio);
}

/// One size sweep: one backend for the whole sweep, its worker shared. Dynamic: each region compiled once and run at
/// every size (a size that fails a guard recompiles inside it). Static (--static): a compile per size, as a program
/// compiled with dynamic=False gets (one torch.compile reused at every size would hit Dynamo's recompile limit).
class SizeSweep {
 public:
  SizeSweep(const Program& program, const BoundInputs& inputs, const SizeSweepOptions& options)
      : program_(program), inputs_(inputs), options_(options), fixed_sizes_(options.diff.backend.static_shapes),
        per_size_(options.diff) {
    per_size_.localize.enabled = false;
    per_size_.workaround.enabled = false;
    per_size_.repro_dir.clear();
  }

  SizeSweepResult run() {
    const auto start = std::chrono::steady_clock::now();
    s_.graph = program_.path;
    s_.inputs = inputs_.origin;
    const std::map<std::string, std::string> symbols = input_symbols(program_, inputs_);
    if (symbols.empty())
      throw Error(Error::Kind::Usage, "the graph has no dynamic dim to sweep: every input size is static in the archive (export with "
                                      "dynamic_shapes={...: torch.export.Dim(...)} to vary one)");
    std::vector<SizeDim> dims = options_.dims;
    if (dims.empty())
      for (const auto& [sym, where] : symbols) dims.push_back({sym, {}});
    backend_ = make_backend(options_.diff.compiled, program_, options_.diff.backend);
    if (!fixed_sizes_) backend_ = make_caching_backend(std::move(backend_), &cached_compiles_);
    for (const SizeDim& asked : dims) sweep_dim(asked, symbols);
    size_t static_compiles = 0;  // the static compile has its own backend (its compiles are not the sweep's to share)
    if (options_.static_check && !fixed_sizes_ && !s_.symbols.empty()) static_compiles = check_static();
    s_.compiles = (fixed_sizes_ ? uncached_compiles_ : cached_compiles_()) + static_compiles;
    s_.recompiles = recompiles_;
    s_.seconds = elapsed_since(start);
    return std::move(s_);
  }

 private:
  void sweep_dim(const SizeDim& asked, const std::map<std::string, std::string>& symbols) {
    auto [symbol, why] = resolve_dim(program_, inputs_, asked.name, symbols);
    if (symbol.empty()) {
      s_.refused_dims.push_back(why);
      return;
    }
    s_.symbols.push_back(symbol);
    s_.described.push_back(fmt::format("{} in {}", symbols.at(symbol), range_text(program_, symbol)));
    std::vector<int64_t> sizes = asked.sizes;
    if (sizes.empty()) {
      auto r = program_.ir.range_constraints.find(symbol);
      const int64_t lo = r != program_.ir.range_constraints.end() && r->second.min ? *r->second.min : 0;
      sizes = default_sizes(lo, r != program_.ir.range_constraints.end() ? r->second.max : std::nullopt);
    }
    std::map<int64_t, SizePoint> done;
    for (int64_t size : run_order(sizes, inputs_.symbols.at(symbol))) done[size] = judge(symbol, size);
    localize_smallest_failing(symbol, done);
    for (auto& [size, p] : done) s_.points.push_back(std::move(p));
  }

  /// The graph at `symbol` = `size`, judged without localization.
  SizePoint judge(const std::string& symbol, int64_t size) {
    SizePoint p;
    p.symbol = symbol;
    p.size = size;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      DiffResult r = diff(program_, resize_inputs(program_, inputs_, symbol, size), per_size_, *backend_);
      if (fixed_sizes_) uncached_compiles_ += r.compiles.size();
      fill_summary(p, r);
      const int64_t now = recompiles_so_far(r);
      p.recompiles = std::max<int64_t>(0, now - recompiles_);
      recompiles_ = std::max(recompiles_, now);
      if (!s_.shapes)
        for (const CompileRecord& c : r.compiles)
          if (c.what == "graph" && c.shapes) s_.shapes = c.shapes;
    } catch (const Error& e) {
      p.refused = e.what();
    }
    p.seconds = elapsed_since(t0);
    return p;
  }

  /// The smallest failing size of a dim, localized through the same backend (its compiles are the sweep's).
  void localize_smallest_failing(const std::string& symbol, std::map<int64_t, SizePoint>& done) {
    if (!options_.localize || !options_.diff.localize.enabled) return;
    for (auto& [size, p] : done) {
      if (!p.fails) continue;
      DiffResult r = diff(program_, resize_inputs(program_, inputs_, symbol, size), options_.diff, *backend_);
      if (fixed_sizes_) uncached_compiles_ += r.compiles.size() + (r.localization ? r.localization->compiles : 0);
      if (r.localization && r.localization->culprit.named()) {
        std::string names;
        for (const std::string& n : r.localization->culprit.nodes) names += (names.empty() ? "" : ", ") + n;
        p.culprit = names;
      }
      s_.localized.push_back(std::move(r));
      return;
    }
  }

  /// Static against dynamic at one size: where a bug lives only in the symbolic compile, the static one agrees. At the
  /// first dim's smallest failing size, else its smallest suspicious one, else the given inputs' size. Its compiles.
  size_t check_static() {
    auto first = [&](auto&& wanted) -> const SizePoint* {
      for (const SizePoint& p : s_.points)
        if (p.symbol == s_.symbols.front() && p.judged && p.size >= 2 && wanted(p)) return &p;
      return nullptr;
    };
    const SizePoint* at = first([](const SizePoint& p) { return p.fails; });
    if (!at) at = first([](const SizePoint& p) { return p.level != Level::Pass; });
    if (!at) at = first([&](const SizePoint& p) { return p.size == inputs_.symbols.at(p.symbol); });
    if (!at || at->size < 2) return 0;
    DiffOptions fixed = per_size_;
    fixed.backend.static_shapes = true;
    try {
      DiffResult r = diff(program_, resize_inputs(program_, inputs_, at->symbol, at->size), fixed);
      StaticCheck c;
      c.symbol = at->symbol;
      c.size = at->size;
      c.dynamic_level = at->level;
      c.dynamic_ratio = at->worst_ratio;
      c.dynamic_node_ratio = at->node_ratio;
      c.static_level = result_level(r);
      for (const OutputVerdict& o : r.outputs) c.static_ratio = std::max(c.static_ratio, o.verdict.error_ratio);
      c.static_node_ratio = r.node_verdict.worst_ratio;
      c.differ = c.static_level != c.dynamic_level;
      c.summary = static_check_summary(c);
      s_.static_check = c;
      return r.compiles.size();
    } catch (const Error&) {
      return 0;  // the size ran dynamic a moment ago: a refusal now would be the memory left; the sweep stands without it
    }
  }

  const Program& program_;
  const BoundInputs& inputs_;
  const SizeSweepOptions& options_;
  const bool fixed_sizes_;
  DiffOptions per_size_;  // each size judged without localization, workaround or repro
  std::function<size_t()> cached_compiles_;
  std::unique_ptr<Backend> backend_;
  size_t uncached_compiles_ = 0;
  int64_t recompiles_ = 0;
  SizeSweepResult s_;
};

}  // namespace

SizeSweepResult sweep_sizes(const Program& program, const BoundInputs& inputs, const SizeSweepOptions& options) {
  return SizeSweep(program, inputs, options).run();
}

}  // namespace pt2diff
