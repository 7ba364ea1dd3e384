// engine/dist/lockstep.cpp — every rank's graph in lockstep, collectives simulated exactly (lockstep.h).
#include "engine/dist/lockstep.h"

#include <ATen/ops/cat.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/minimum.h>
#include <c10/core/DefaultDtype.h>
#include <algorithm>
#include <condition_variable>
#include <exception>
#include <fmt/format.h>
#include <mutex>
#include <thread>

#include "graphs/collectives.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace {

std::string sizes_str(const at::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

/// Folds `values` (group order) left with `reduce`, in their dtype.
at::Tensor fold(const std::vector<at::Tensor>& values, const std::string& reduce, const std::string& node) {
  at::Tensor acc = values.front().clone();
  for (size_t i = 1; i < values.size(); ++i) {
    const at::Tensor& x = values[i];
    if (reduce == "sum" || reduce == "avg") acc = acc.add(x);
    else if (reduce == "product") acc = acc.mul(x);
    else if (reduce == "max") acc = at::maximum(acc, x);
    else if (reduce == "min") acc = at::minimum(acc, x);
    else
      throw Error(Error::Kind::Unsupported, fmt::format("node '{}': the reduction '{}' is not simulated (sum, avg, product, "
                                                        "max, min are)", node, reduce));
  }
  if (reduce == "avg") acc = acc.div(static_cast<double>(values.size()));
  return acc;
}

/// The collectives of one lockstep run: each rank's call deposited under (group, its n-th call over that group);
/// the last to arrive computes every rank's result.
class Rendezvous {
 public:
  Rendezvous(int world, const GroupRanks& groups) : groups_(groups), seq_(static_cast<size_t>(world)),
                                                    done_(static_cast<size_t>(world), false),
                                                    why_done_(static_cast<size_t>(world)) {}

  at::Tensor exchange(int rank, const Node& node, const at::Tensor& input) {
    std::string why;
    auto call = collective_call(node, why);
    if (!call) throw Error(Error::Kind::Unsupported, fmt::format("rank {}: node '{}': {}", rank, node.name, why));
    auto g = groups_.find(call->group);
    if (g == groups_.end())
      throw Error(Error::Kind::BadArchive, fmt::format("rank {}: node '{}' ({}) uses group '{}', which the capture's index does not "
                                                       "list", rank, node.name, collective_op_name(call->op), call->group));
    const std::vector<int>& members = g->second;
    auto pos = std::find(members.begin(), members.end(), rank);
    if (pos == members.end())
      throw Error(Error::Kind::BadArchive, fmt::format("rank {}: node '{}' uses group '{}', whose ranks {} do not include it",
                                                       rank, node.name, call->group, fmt::join(members, ", ")));
    std::unique_lock<std::mutex> lock(mutex_);
    const int64_t seq = seq_[static_cast<size_t>(rank)][call->group]++;
    Slot& slot = slots_[{call->group, seq}];
    if (slot.calls.empty()) {
      slot.first_rank = rank;
      slot.first = *call;
      slot.first_sizes = sizes_str(input);
      slot.first_dtype = input.scalar_type();
    } else if (slot.error.empty()) {
      const CollectiveCall& f = slot.first;
      if (f.op != call->op || f.reduce != call->reduce || slot.first_dtype != input.scalar_type() ||
          (call->op != CollectiveCall::Op::AllToAll && slot.first_sizes != sizes_str(input)))
        slot.error = fmt::format("the ranks desync at collective #{} over group '{}': rank {} issues {}{} of {} {} at node '{}', "
                                 "rank {} issues {}{} of {} {} at node '{}'", seq + 1, call->group, slot.first_rank,
                                 collective_op_name(f.op), f.reduce.empty() ? "" : "(" + f.reduce + ")",
                                 c10::toString(slot.first_dtype), slot.first_sizes, f.name, rank,
                                 collective_op_name(call->op), call->reduce.empty() ? "" : "(" + call->reduce + ")",
                                 c10::toString(input.scalar_type()), sizes_str(input), call->name);
    }
    slot.calls[rank] = *call;
    slot.inputs[rank] = input;
    if (slot.error.empty() && slot.inputs.size() == members.size()) {
      try {
        compute(slot, members);
      } catch (const std::exception& e) {
        slot.error = e.what();
      }
      cv_.notify_all();
    }
    cv_.wait(lock, [&] { return slot.computed || !slot.error.empty() || missing_member_done(slot, members); });
    if (!slot.error.empty()) throw Error(Error::Kind::BadArchive, slot.error);
    if (!slot.computed) throw Error(Error::Kind::BadArchive, slot.error = desync_by_end(slot, members, seq, call->group));
    return slot.results.at(static_cast<size_t>(pos - members.begin()));
  }

  /// Rank `rank`'s run ended (`why`: its error, empty when it finished): whoever waits for it learns it.
  void finished(int rank, const std::string& why) {
    std::lock_guard<std::mutex> lock(mutex_);
    done_[static_cast<size_t>(rank)] = true;
    why_done_[static_cast<size_t>(rank)] = why;
    cv_.notify_all();
  }

 private:
  struct Slot {
    int first_rank = -1;
    CollectiveCall first;
    std::string first_sizes;
    at::ScalarType first_dtype = at::kFloat;
    std::map<int, CollectiveCall> calls;
    std::map<int, at::Tensor> inputs;
    std::vector<at::Tensor> results;  ///< by group position
    bool computed = false;
    std::string error;
  };

  bool missing_member_done(const Slot& slot, const std::vector<int>& members) const {
    for (int m : members)
      if (!slot.inputs.count(m) && done_[static_cast<size_t>(m)]) return true;
    return false;
  }

  std::string desync_by_end(const Slot& slot, const std::vector<int>& members, int64_t seq, const std::string& group) const {
    for (int m : members)
      if (!slot.inputs.count(m) && done_[static_cast<size_t>(m)]) {
        const std::string& why = why_done_[static_cast<size_t>(m)];
        return why.empty() ? fmt::format("the ranks desync: rank {} ended its graph without collective #{} over group '{}', which rank "
                                         "{} issues at node '{}' ({})", m, seq + 1, group, slot.first_rank, slot.first.name,
                                         collective_op_name(slot.first.op))
                           : fmt::format("rank {} failed before collective #{} over group '{}' (node '{}'): {}", m, seq + 1, group,
                                         slot.first.name, why);
      }
    return "internal error: a collective was released without its result";
  }

  void compute(Slot& slot, const std::vector<int>& members) {
    std::vector<at::Tensor> values;
    for (int m : members) values.push_back(slot.inputs.at(m));
    const CollectiveCall& c = slot.first;
    const size_t n = members.size();
    slot.results.assign(n, at::Tensor());
    switch (c.op) {
      case CollectiveCall::Op::AllReduce: {
        at::Tensor r = fold(values, c.reduce, c.name);
        for (size_t i = 0; i < n; ++i) slot.results[i] = i == 0 ? r : r.clone();
        break;
      }
      case CollectiveCall::Op::AllGather: {
        at::Tensor r = at::cat(values, 0);
        for (size_t i = 0; i < n; ++i) slot.results[i] = i == 0 ? r : r.clone();
        break;
      }
      case CollectiveCall::Op::ReduceScatter: {
        at::Tensor r = fold(values, c.reduce, c.name);
        if (r.dim() == 0 || r.size(0) % static_cast<int64_t>(n) != 0)
          throw Error(Error::Kind::BadArchive, fmt::format("node '{}': reduce_scatter of {} over {} ranks: dim 0 does not split evenly",
                                                           c.name, sizes_str(r), n));
        auto chunks = r.chunk(static_cast<int64_t>(n), 0);
        for (size_t i = 0; i < n; ++i) slot.results[i] = chunks[i].contiguous();
        break;
      }
      case CollectiveCall::Op::Broadcast: {
        auto src = std::find(members.begin(), members.end(), static_cast<int>(c.src));
        if (src == members.end())
          throw Error(Error::Kind::BadArchive, fmt::format("node '{}': broadcast from rank {}, not in its group", c.name, c.src));
        for (size_t i = 0; i < n; ++i) slot.results[i] = values[static_cast<size_t>(src - members.begin())].clone();
        break;
      }
      case CollectiveCall::Op::AllToAll: {
        // Rank j sends its input split by its input_split_sizes; rank i gets the i-th piece of each, in group order.
        std::vector<std::vector<at::Tensor>> pieces;
        for (size_t j = 0; j < n; ++j) {
          const CollectiveCall& cj = slot.calls.at(members[j]);
          pieces.push_back(cj.input_split_sizes.empty() ? values[j].chunk(static_cast<int64_t>(n), 0)
                                                        : values[j].split_with_sizes(cj.input_split_sizes, 0));
          if (pieces.back().size() != n)
            throw Error(Error::Kind::BadArchive, fmt::format("node '{}' on rank {}: all_to_all_single splits into {} pieces for {} ranks",
                                                             cj.name, members[j], pieces.back().size(), n));
        }
        for (size_t i = 0; i < n; ++i) {
          std::vector<at::Tensor> got;
          for (size_t j = 0; j < n; ++j) got.push_back(pieces[j][i]);
          slot.results[i] = at::cat(got, 0);
        }
        break;
      }
      case CollectiveCall::Op::Wait: break;  // never exchanged
    }
    slot.computed = true;
  }

  const GroupRanks& groups_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::pair<std::string, int64_t>, Slot> slots_;
  std::vector<std::map<std::string, int64_t>> seq_;
  std::vector<bool> done_;
  std::vector<std::string> why_done_;
};

}  // namespace

std::vector<RankRun> run_ranks_in_lockstep(const std::vector<const Program*>& programs, const std::vector<const BoundInputs*>& inputs,
                                           Precision precision, const GroupRanks& groups) {
  const int world = static_cast<int>(programs.size());
  std::vector<std::unique_ptr<Interpreter>> interpreters;
  for (int r = 0; r < world; ++r) interpreters.push_back(std::make_unique<Interpreter>(*programs[static_cast<size_t>(r)]));
  Rendezvous rendezvous(world, groups);
  std::vector<RankRun> runs(static_cast<size_t>(world));
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
  // The interpreter sets the default dtype for an fp64 run and restores it after: set here first, so no rank's
  // run restores it under another rank's feet.
  const caffe2::TypeMeta saved_dtype = c10::get_default_dtype();
  if (precision == Precision::Fp64) c10::set_default_dtype(caffe2::TypeMeta::Make<double>());
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      RankRun& run = runs[static_cast<size_t>(r)];
      const Graph& g = programs[static_cast<size_t>(r)]->ir.graph;
      RunOptions o;
      o.precision = precision;
      o.collective = [&](const Node& node, const at::Tensor& input) {
        run.collective_inputs[node.name] = input;
        return rendezvous.exchange(r, node, input);
      };
      o.on_node = [&](const Node& node, const std::vector<c10::IValue>& outputs) {
        if (!is_collective_target(node.target)) return;
        const std::vector<ValueId> ids = node.output_values();
        for (size_t i = 0; i < ids.size() && i < outputs.size(); ++i)
          if (outputs[i].isTensor()) run.collective_values[g.value(ids[i]).name] = outputs[i].toTensor();
      };
      std::string why;
      try {
        run.result = interpreters[static_cast<size_t>(r)]->run(*inputs[static_cast<size_t>(r)], o);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = std::current_exception();
        why = e.what();
      }
      rendezvous.finished(r, why);
    });
  for (auto& t : threads) t.join();
  c10::set_default_dtype(saved_dtype);
  // The first error in rank order, unless it only reports another rank's: that rank's own error first.
  for (int r = 0; r < world; ++r)
    if (errors[static_cast<size_t>(r)]) {
      try {
        std::rethrow_exception(errors[static_cast<size_t>(r)]);
      } catch (const Error& e) {
        const std::string msg = e.what();
        if (msg.find(" failed before collective") != std::string::npos) continue;
        throw Error(e.kind(), msg.rfind("rank ", 0) == 0 || msg.find("desync") != std::string::npos ? msg : fmt::format("rank {}: {}", r, msg));
      }
    }
  for (int r = 0; r < world; ++r)
    if (errors[static_cast<size_t>(r)]) std::rethrow_exception(errors[static_cast<size_t>(r)]);
  return runs;
}

}  // namespace pt2diff
