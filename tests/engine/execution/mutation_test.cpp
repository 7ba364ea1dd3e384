// tests/engine/execution/mutation_test.cpp — graphs that write in place into what another node or the caller sees
// (fixtures/make_mutation_fixtures.py): the storage model, each written input and buffer judged after the graph and
// bit-exact against PyTorch eager run here, and faults planted on writes, on reads after them and on the storage
// through a view localized to their node (the fault backend: no compiler;
// tests/engine/localize/test_mutation_inductor.py has Inductor's own bugs).
#include <gtest/gtest.h>

#include <ATen/ops/equal.h>
#include <algorithm>

#include "../../test_support.h"
#include "engine/localize/compiled_oracle.h"
#include "pt2diff/advanced/interpreter.h"
#include "pt2diff/diff.h"
#include "pt2diff/values.h"

namespace pt2diff {
namespace {

using testing::fixture;

std::string mutation_archive(const std::string& name) { return fixture("mutation/" + name + ".pt2") + " " + fixture("mutation/" + name + "_inputs.pt"); }

NodeId node(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes())
    if (n.name == name) return n.id;
  ADD_FAILURE() << "no node " << name;
  return kGraphInput;
}

bool has(const std::vector<NodeId>& v, NodeId id) { return std::find(v.begin(), v.end(), id) != v.end(); }

TEST(Mutation, StorageModelFollowsViewsWritesAndReads) {
  // x[:, :4].copy_(sigmoid(...)[:, :4]); out = x * 2.0; x[2:].zero_()
  Program p = load_program(fixture("mutation/view_write.pt2"));
  Interpreter interpreter(p);
  const StorageModel m = interpreter.storage_model();
  const Graph& g = p.ir.graph;
  const ValueId x = g.find("x");
  ASSERT_EQ(m.mutated_inputs, std::vector<ValueId>{x});
  const NodeId copy = node(g, "copy_"), mul = node(g, "mul"), zero = node(g, "zero_");
  EXPECT_EQ(m.writers[static_cast<size_t>(x)], (std::vector<NodeId>{copy, zero}));
  EXPECT_EQ(m.root[static_cast<size_t>(g.find("slice_1"))], x);  // the view copy_ writes through
  EXPECT_TRUE(has(m.after[static_cast<size_t>(mul)], copy));       // mul reads x after copy_ wrote it
  EXPECT_TRUE(has(m.after[static_cast<size_t>(zero)], mul));       // zero_ writes x after mul read it
  EXPECT_EQ(m.write_seen(g, x, mul), copy);
  EXPECT_EQ(m.write_seen(g, x, copy), std::nullopt);
  // A write into a fresh value only its writer reads (relu_ after a linear) is its functional form: no effect.
  Program confined = load_program(fixture("in_place_confined.pt2"));
  EXPECT_FALSE(Interpreter(confined).storage_model().any());
}

TEST(Mutation, AWriteAfterAReadIsInTheConeAndTheWindowJudgesTheRead) {
  // out = x * 2.0 reads x; x[2:].zero_() writes it later: no data edge leads from zero_ to out, yet a compiler that
  // puts mul's result into x's storage has zero_ clobber it (pytorch#198094: a reinplaced scatter). The failing
  // output's cone keeps the later write, and a window holding both judges mul's value.
  Program p = load_program(fixture("mutation/view_write.pt2"));
  const StorageModel m = Interpreter(p).storage_model();
  const Graph& g = p.ir.graph;
  const ValueId x = g.find("x");
  const NodeId copy = node(g, "copy_"), mul = node(g, "mul"), zero = node(g, "zero_");
  EXPECT_EQ(m.first_write_after(x, mul), zero);
  EXPECT_EQ(m.first_write_after(x, copy), zero);
  EXPECT_EQ(m.first_write_after(x, zero), std::nullopt);
  const std::vector<NodeId> cone = failing_cone(g, {g.find("mul")}, &m);
  EXPECT_TRUE(has(cone, zero)) << "the later write is in the cone";
  EXPECT_TRUE(has(cone, copy)) << "the earlier write mul reads is in the cone";
  EXPECT_EQ(read_before_written(g, m, {mul, zero}), std::vector<ValueId>{g.find("mul")});
  EXPECT_TRUE(read_before_written(g, m, {mul}).empty()) << "no write after it in the region";
}

TEST(Mutation, WrittenInputsAndBuffersAreResultsBitExactAgainstPythonEager) {
  // name -> the results after the graph, as reports name them, and the entries of NAME.after.pt they are.
  const std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> cases = {
      {"scatter_into_input", {{"input 'x' after the graph", "x"}}},
      {"view_write", {{"input 'x' after the graph", "x"}}},
      {"kv_cache", {{"buffer 'k_cache' after the graph", "k_cache"}, {"buffer 'v_cache' after the graph", "v_cache"}}},
      {"bn_train",
       {{"buffer 'bn.running_mean' after the graph", "bn.running_mean"}, {"buffer 'bn.running_var' after the graph", "bn.running_var"},
        {"buffer 'bn.num_batches_tracked' after the graph", "bn.num_batches_tracked"}}},
  };
  for (const auto& [name, results] : cases) {
    Program p = load_program(fixture("mutation/" + name + ".pt2"));
    DiffOptions o;
    o.compiled = "eager";
    const DiffResult r = diff(p, bind_inputs(p, load_inputs(fixture("mutation/" + name + "_inputs.pt"))), o);
    EXPECT_FALSE(counts_as_failing(r)) << name << "\n" << to_text(r);
    const UserInputs after = load_inputs(testing::eager_inputs_after("mutation/" + name));
    for (const auto& [result, entry] : results) {
      auto at = std::find_if(r.outputs.begin(), r.outputs.end(), [&](const OutputVerdict& o) { return o.name == result; });
      ASSERT_NE(at, r.outputs.end()) << name << ": no result " << result << "\n" << to_text(r);
      const at::Tensor eager = r.values->outputs.at(static_cast<size_t>(at - r.outputs.begin())).eager;
      auto want = std::find_if(after.kwargs.begin(), after.kwargs.end(), [&](const auto& kv) { return kv.first == entry; });
      ASSERT_NE(want, after.kwargs.end()) << name << ": " << entry;
      EXPECT_TRUE(at::equal(eager, std::get<at::Tensor>(want->second))) << name << ": " << result;
      EXPECT_TRUE(at->verdict.pass) << name << ": " << result;
    }
    // Nothing is skipped for a write another node sees.
    for (const std::string& w : r.warnings) EXPECT_EQ(w.find("skipped"), std::string::npos) << name << ": " << w;
  }
}

TEST(Mutation, FaultsOnWritesAndReadsAfterThemAreLocalized) {
  // name, fault node, the result expected to fail
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"scatter_into_input", "index_put_", "input 'x' after the graph"},  // the scatter into the input
      {"scatter_into_input", "add_", "input 'x' after the graph"},        // the write after a read through flip
      {"view_write", "copy_", "input 'x' after the graph"},               // a write through a view
      {"view_write", "mul", "mul"},                                       // a read after the write
      {"kv_cache", "index_copy__1", "buffer 'v_cache' after the graph"},  // the KV cache's update
  };
  for (const auto& [name, at, result] : cases) {
    auto r = testing::run_cli(mutation_archive(name) + " --compiled fault:" + at + ":scale=0.05");
    EXPECT_EQ(r.exit_code, 1) << name << " " << at << ": " << r.err;
    EXPECT_NE(r.out.find("FAIL       " + result), std::string::npos) << name << " " << at << ": " << r.out;
    EXPECT_NE(r.out.find("single_op: " + at + " "), std::string::npos) << name << " " << at << ": " << r.out;
    EXPECT_EQ(r.out.find("skipped"), std::string::npos) << r.out;
  }
}

TEST(InPlace, SeenWritesAreJudgedAndLocalized) {
  // relu_ writes a slice of linear, which mul reads; tanh_ writes the graph input x, which the graph returns.
  auto clean = testing::run_cli(fixture("in_place_seen.pt2") + " " + fixture("in_place_seen_inputs.pt") + " --compiled eager");
  EXPECT_EQ(clean.exit_code, 0) << clean.out << clean.err;
  EXPECT_NE(clean.out.find("PASS       input 'x' after the graph"), std::string::npos) << clean.out;
  for (const std::string at : {"linear_1", "mul", "tanh_"}) {
    auto r = testing::run_cli(fixture("in_place_seen.pt2") + " " + fixture("in_place_seen_inputs.pt") + " --compiled fault:" + at +
                              ":scale=0.05");
    EXPECT_EQ(r.exit_code, 1) << at << ": " << r.err;
    EXPECT_NE(r.out.find("single_op: " + at + " "), std::string::npos) << at << ": " << r.out;
  }
}

}  // namespace
}  // namespace pt2diff
