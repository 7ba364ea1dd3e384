// tests/graphs/graph_builder.h — hand-made graphs for tests of the IR and what reads it (no torch).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "pt2diff/graph.h"

namespace pt2diff::testing {

/// Builds graphs by value name, the way tests read best.
class Builder {
 public:
  explicit Builder(std::vector<std::string> inputs) {
    for (const auto& n : inputs) g_.add_input(t(n));
  }
  Argument t(const std::string& name) {
    ValueId v = g_.find(name);
    if (v == kNoValue) v = g_.add_value(name, ValueKind::Tensor);
    return Argument{Argument::Kind::Tensor, v};
  }
  Argument list(const std::vector<std::string>& names) {
    std::vector<ValueId> ids;
    for (const auto& n : names) ids.push_back(t(n).as<ValueId>());
    return Argument{Argument::Kind::Tensors, ids};
  }
  NodeId node(const std::string& name, const std::string& op, std::vector<Argument> ins, std::vector<Argument> outs) {
    Node n;
    n.name = name;
    n.target = "torch.ops.aten." + op;
    for (auto& a : ins) n.inputs.push_back({"", std::move(a), false});
    n.outputs = std::move(outs);
    return g_.add_node(std::move(n));
  }
  NodeId node_with(Node n) { return g_.add_node(std::move(n)); }
  Graph finish(const std::vector<std::string>& outputs) {
    for (const auto& o : outputs) g_.add_output(t(o));
    g_.finalize();
    return std::move(g_);
  }

 private:
  Graph g_;
};

}  // namespace pt2diff::testing
