// engine/hints/aliasing.cpp — does the culprit window write in place? Then what diverges may be how the compiler
// keeps those writes: torch.compile functionalizes them (each write a new value), Inductor writes scatters back in
// place (fx_passes/reinplace.py), copies every written input back at the end, and fuses reads and writes of one
// storage into kernels whose order must match the program's. This hint says, from the storage model, which storage
// each node writes, through which view, who reads it between the writes, and whether the result must be written
// back into a value the window was given; the compiler_lever hint then compiles the levers that bear on it.
#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/hints/hint_context.h"
#include "graphs/graph_text.h"

namespace pt2diff {

namespace {

/// How a user names a storage: "input 'x'", "buffer 'k_cache'", or "'linear' (made by linear)".
std::string storage_name(const Program& p, ValueId r) {
  const Value& v = p.ir.graph.value(r);
  if (v.producer != kGraphInput) return fmt::format("'{}' (made by {})", v.name, p.ir.graph.node(v.producer).name);
  for (const InputSpec& in : p.ir.input_specs)
    if (in.arg.values() == std::vector<ValueId>{r}) {
      if (in.kind == InputSpec::Kind::Buffer) return fmt::format("buffer '{}'", in.target);
      if (in.kind == InputSpec::Kind::Parameter) return fmt::format("parameter '{}'", in.target);
    }
  return fmt::format("input '{}'", v.name);
}

const std::vector<std::string> kScatters = {"index_put_", "index_copy_", "index_add_", "scatter_", "scatter_add_", "scatter_reduce_",
                                            "masked_scatter_", "masked_fill_", "copy_", "slice_scatter", "select_scatter", "index_fill_"};

}  // namespace

std::optional<Hint> aliasing_hint(const HintContext& ctx) {
  if (!ctx.storage) return std::nullopt;
  const StorageModel& m = *ctx.storage;
  const Graph& g = ctx.program.ir.graph;
  std::vector<ValueId> roots;  // written in the window, in order of first write
  for (NodeId id : ctx.window.nodes)
    for (ValueId r : m.writes[static_cast<size_t>(id)])
      if (std::find(roots.begin(), roots.end(), r) == roots.end()) roots.push_back(r);
  if (roots.empty()) return std::nullopt;
  Hint h;
  h.kind = "aliasing";
  bool read_between = false, through_view = false, scatter = false, read_before = false;
  std::vector<std::string> stories;
  for (ValueId r : roots) {
    const std::string name = storage_name(ctx.program, r);
    std::vector<std::string> events, writers, readers_between, readers_before;
    bool written = false;
    for (NodeId id : ctx.window.nodes) {
      const Node& n = g.node(id);
      const auto& w = m.writes[static_cast<size_t>(id)];
      const bool writes = std::find(w.begin(), w.end(), r) != w.end();
      std::vector<std::string> via;  // the views of r it reads or writes
      bool reads = false;
      for (ValueId v : n.input_values())
        if (m.root[static_cast<size_t>(v)] == r) {
          reads = true;
          // A view of it (not the return of an earlier write, which is the storage itself).
          if (v != r && g.value(v).producer != kGraphInput && m.writes[static_cast<size_t>(g.value(v).producer)].empty())
            via.push_back(g.value(v).name);
        }
      const std::string op = short_target(n.target);
      if (writes) {
        writers.push_back(n.name);
        scatter = scatter || std::any_of(kScatters.begin(), kScatters.end(), [&](const std::string& s) { return op.find("aten." + s) == 0; });
        through_view = through_view || !via.empty();
        events.push_back(fmt::format("{} ({}) writes into it{}", n.name, op, via.empty() ? "" : fmt::format(" through the view {}", fmt::join(via, ", "))));
        written = true;
      } else if (reads && written && !(n.output_values().size() == 1 && m.root[static_cast<size_t>(n.output_values().front())] == r)) {
        readers_between.push_back(n.name);
        events.push_back(fmt::format("{} ({}) reads it after that write", n.name, op));
      }
      // A read before the window's first write of it (a write after a read), by an op that makes a new value from it.
      if (reads && !writes && !written && !(n.output_values().size() == 1 && m.root[static_cast<size_t>(n.output_values().front())] == r))
        if (auto w = m.first_write_after(r, id);
            w && std::find(ctx.window.nodes.begin(), ctx.window.nodes.end(), *w) != ctx.window.nodes.end()) {
          readers_before.push_back(n.name);
          events.push_back(fmt::format("{} ({}) reads it before {} ({}) writes into it", n.name, op, g.node(*w).name,
                                       short_target(g.node(*w).target)));
        }
    }
    const bool fed = std::any_of(ctx.window.inputs.begin(), ctx.window.inputs.end(), [&](ValueId v) { return m.root[static_cast<size_t>(v)] == r; });
    read_between = read_between || !readers_between.empty();
    read_before = read_before || !readers_before.empty();
    h.notes.push_back(fmt::format("{}: {}{}", name, fmt::join(events, "; "),
                                  fed ? "; the window was given it, so the compiled window writes its result back into it" : ""));
    stories.push_back(fmt::format("{} write{} into {}{}{}", fmt::join(writers, " and "), writers.size() == 1 ? "s" : "", name,
                                  readers_between.empty() ? "" : fmt::format(", which {} read{} after the write", fmt::join(readers_between, ", "),
                                                                             readers_between.size() == 1 ? "s" : ""),
                                  readers_before.empty() ? "" : fmt::format(", which {} read{} before", fmt::join(readers_before, ", "),
                                                                            readers_before.size() == 1 ? "s" : "")));
  }
  h.evidence = {{"storages_written", static_cast<double>(roots.size())}};
  h.finding = read_between ? "read_after_write" : read_before ? "write_after_read" : through_view ? "write_through_view" : scatter ? "scatter_written_back" : "write_back";
  const char* why =
      read_between ? "the compiled window must read each value before or after the write exactly as the program does: "
                     "Inductor functionalizes the writes and may reinplace a scatter or fuse a read of the storage into "
                     "the kernel that writes it"
      : read_before ? "a value made from the storage before the write must keep what it read: Inductor may put that value "
                      "into the storage itself (a scatter reinplaced into its input, a copy of an input replaced by the "
                      "input), and the later write then clobbers it"
      : through_view ? "the compiled window must write through the view into the whole storage: functionalization turns "
                       "the write into a scatter of the view into its base (slice_scatter, as_strided_scatter)"
      : scatter ? "Inductor turns the functional scatter back into a write in place (reinplace_inplaceable_ops) when it "
                  "judges it safe, and writes the input back"
                : "the compiled window computes the new value and copies it back into the storage it was given";
  h.summary = fmt::format("the window writes in place: {}; {}", fmt::join(stories, "; "), why);
  if (read_before && !read_between) {
    h.suggestion = "the compiler search (--search-compiler, docs/compiler-search.md) names the pass that put the value into "
                   "the storage; in your program, give the earlier op a copy (torch.slice_scatter(x.clone(), ...)) or make the later "
                   "write out of place (x = torch.zeros_like(x) instead of x.zero_()) so that nothing reads a storage before "
                   "it is written";
    return h;
  }
  h.suggestion = "see the compiler_lever hint for the levers compiled on this window (max_fusion_size=1 keeps a read and a write "
                 "of one storage out of one kernel; inplace_buffers=False stops Inductor reusing a buffer in place); in your "
                 "program, the write out of place (x = x.index_put(...) instead of x.index_put_(...)) or behind "
                 "torch.compiler.disable avoids it";
  return h;
}

}  // namespace pt2diff
