// engine/dist/diff_distributed.cpp — `pt2diff dist DIR`: every rank's captured graphs judged in lockstep against
// one fp64 step, the compiled ranks run for real in a process group, each rank's rank-local program diffed
// (pt2diff/dist.h, docs/distributed.md).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ATen/ops/equal.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/minimum.h>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "engine/dist/lockstep.h"
#include "graphs/collectives.h"
#include "pt2diff/advanced/backend.h"
#include "pt2diff/compare.h"
#include "pt2diff/diff.h"
#include "pt2diff/dist.h"
#include "pt2diff/error.h"
#include "pt2diff/program.h"

namespace pt2diff {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

/// One rank's folder of the capture.
struct RankFolder {
  int rank = 0;
  fs::path folder;
  std::map<int, json> graphs;  ///< the index's entries that were exported ("status": "ok"), by id
};

struct Capture {
  int world_size = 0;
  std::string backend;
  GroupRanks groups;
  std::vector<ProcessGroupSpec::Group> other_groups;  ///< besides WORLD, in the index's order
  std::vector<RankFolder> ranks;
  std::vector<int> graph_ids;
};

Capture read_capture(const std::string& dir) {
  const std::string remedy = "capture the program under its process group with pt2diff_capture (python -m pt2diff_capture ranks "
                             "--nproc N SCRIPT OUT, or torchrun with capture_backend: docs/distributed.md)";
  if (!fs::is_directory(dir)) throw Error(Error::Kind::Usage, fmt::format("{}: not a directory; {}", dir, remedy));
  Capture c;
  std::map<int, RankFolder> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || name.rfind("rank_", 0) != 0) continue;
    int rank = -1;
    try {
      rank = std::stoi(name.substr(5));
    } catch (...) {
      continue;
    }
    const fs::path index = e.path() / "index.json";
    json doc;
    try {
      std::ifstream in(index);
      if (!in) throw std::runtime_error("cannot open it");
      doc = json::parse(in);
    } catch (const std::exception& ex) {
      throw Error(Error::Kind::BadArchive, fmt::format("{}: not a readable capture index ({}); capture rank {} again", index.string(),
                                                       ex.what(), rank));
    }
    const json d = doc.value("distributed", json());
    if (!d.is_object())
      throw Error(Error::Kind::BadArchive, fmt::format("{}: no \"distributed\" section: rank {} was not captured under a process "
                                                       "group; {}", index.string(), rank, remedy));
    if (d.value("rank", -1) != rank)
      throw Error(Error::Kind::BadArchive, fmt::format("{} says rank {}, its folder rank {}", index.string(), d.value("rank", -1), rank));
    const int world = d.value("world_size", 0);
    if (c.world_size == 0) {
      c.world_size = world;
      c.backend = d.value("backend", std::string());
      for (const json& g : d.value("groups", json::array())) {
        std::vector<int> ranks = g.value("ranks", std::vector<int>{});
        const std::string gname = g.value("name", std::string());
        c.groups[gname] = ranks;
        if (gname != "0") c.other_groups.push_back({gname, ranks});
      }
      if (!c.groups.count("0")) {
        std::vector<int> all;
        for (int r = 0; r < world; ++r) all.push_back(r);
        c.groups["0"] = all;
      }
    } else if (world != c.world_size) {
      throw Error(Error::Kind::BadArchive, fmt::format("{}: rank {} was captured in a world of {}, another rank in a world of {}: "
                                                       "the folders come from different runs; capture again into an empty folder",
                                                       dir, rank, world, c.world_size));
    }
    RankFolder f{rank, e.path(), {}};
    for (const json& g : doc.value("graphs", json::array()))
      if (g.value("status", std::string()) == "ok" && g.contains("id")) f.graphs[g["id"].get<int>()] = g;
    found[rank] = std::move(f);
  }
  if (found.empty()) throw Error(Error::Kind::Usage, fmt::format("{}: no rank_R folder; {}", dir, remedy));
  for (int r = 0; r < c.world_size; ++r)
    if (!found.count(r))
      throw Error(Error::Kind::BadArchive, fmt::format("{}: rank {} of {} has no folder (rank_{}): every rank's capture is needed; "
                                                       "capture again", dir, r, c.world_size, r));
  for (auto& [r, f] : found) c.ranks.push_back(std::move(f));
  std::set<int> ids;
  for (const RankFolder& f : c.ranks)
    for (const auto& [id, _] : f.graphs) ids.insert(id);
  for (int id : ids)
    for (const RankFolder& f : c.ranks)
      if (!f.graphs.count(id))
        throw Error(Error::Kind::BadArchive, fmt::format("{}: graph {} was exported on some ranks but not on rank {} (see {}): the ranks "
                                                         "compiled different graphs", dir, id, f.rank, (f.folder / "index.json").string()));
  c.graph_ids.assign(ids.begin(), ids.end());
  return c;
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw Error(Error::Kind::Internal, "cannot open a socket to find a free port for the compiled ranks' process group");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw Error(Error::Kind::Internal, "cannot bind 127.0.0.1 to find a free port for the compiled ranks' process group");
  }
  const int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

struct CompiledRank {
  RegionSpec region;
  std::optional<std::vector<c10::IValue>> outputs;
  std::string failure;
  double compile_seconds = 0, run_seconds = 0;
};

/// Every rank's whole graph compiled and run by a worker of its own, the workers forming one process group, so the
/// compiled collectives run for real. The ranks compile and run at once: a collective waits for every rank.
std::vector<CompiledRank> run_compiled_ranks(const std::vector<const Program*>& programs, const std::vector<const BoundInputs*>& inputs,
                                             const DistOptions& options, const Capture& capture,
                                             const std::function<RegionSpec(const Program&)>& make_region) {
  const int world = static_cast<int>(programs.size());
  const std::string init = fmt::format("tcp://127.0.0.1:{}", free_port());
  std::vector<CompiledRank> out(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      CompiledRank& c = out[static_cast<size_t>(r)];
      const Program& p = *programs[static_cast<size_t>(r)];
      try {
        BackendOptions bo = options.diff.backend;
        bo.on_wait = nullptr;  // one progress line is the caller's
        ProcessGroupSpec pg;
        pg.backend = options.process_backend;
        pg.init_method = init;
        pg.rank = r;
        pg.world_size = world;
        pg.timeout_seconds = options.collective_timeout_seconds;
        pg.groups = capture.other_groups;
        bo.process_group = pg;
        // NCCL needs a GPU per rank: rank r compiles and runs on cuda:r, as torchrun's LOCAL_RANK places it.
        if (options.process_backend == "nccl" && bo.device.rfind("cuda", 0) == 0) bo.device = fmt::format("cuda:{}", r);
        auto backend = make_backend(options.diff.compiled, p, bo);
        c.region = make_region(p);
        const std::vector<c10::IValue> all = graph_input_values(p, *inputs[static_cast<size_t>(r)]);
        std::vector<c10::IValue> in;
        for (ValueId v : c.region.inputs) in.push_back(all[static_cast<size_t>(v)]);
        auto compiled = backend->compile(c.region, in);
        c.compile_seconds = backend->last_compile_seconds();
        c.outputs = compiled->run(in);
        c.run_seconds = compiled->last_run_seconds();
      } catch (const std::exception& e) {
        c.failure = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return out;
}

c10::IValue compiled_output(const CompiledRank& c, const OutputSpec& spec) {
  const auto values = spec.arg.values();
  if (values.empty() || !c.outputs) return {};
  auto at = std::find(c.region.outputs.begin(), c.region.outputs.end(), values.front());
  if (at == c.region.outputs.end()) return {};
  return c.outputs->at(static_cast<size_t>(at - c.region.outputs.begin()));
}

std::string rank_output_name(const Program& p, const OutputSpec& spec) {
  const auto values = spec.arg.values();
  return values.empty() ? std::string("None") : p.ir.graph.value(values.front()).name;
}

/// The rank-local program: the graph cut at its collectives, fed eager's values of what they made.
struct RankLocal {
  Program program;
  BoundInputs inputs;
  std::vector<std::string> fed;
};

RankLocal rank_local_program(const Program& p, const BoundInputs& bound, const RankRun& eager) {
  CutGraph cut = cut_at_collectives(p.ir);
  RankLocal rl{p, bound, cut.fed};
  rl.program.ir = std::move(cut.graph);
  const size_t first_new = p.ir.input_specs.size();
  for (size_t k = 0; k < cut.fed.size(); ++k) {
    auto v = eager.collective_values.find(cut.fed[k]);
    if (v == eager.collective_values.end())
      throw Error(Error::Kind::Internal, fmt::format("the collective value '{}' was not recorded", cut.fed[k]));
    rl.inputs.entries.push_back({cut.fed[k], first_new + k, InputValue(v->second)});
  }
  return rl;
}

std::string first_source(const Program& p, const std::string& node) {
  for (const Node& n : p.ir.graph.nodes())
    if (n.name == node) return n.source.user_frame();
  return {};
}


/// Each tensor output of rank `p`'s compiled step judged against the lockstep eager run, fp64 as referee.
std::vector<OutputVerdict> judge_rank_outputs(const Program& p, const CompiledRank& c, const RankRun& eager, const RankRun& fp64,
                                              const DistOptions& options) {
  std::vector<OutputVerdict> out;
  for (size_t i = 0; i < p.ir.output_specs.size(); ++i) {
    const OutputSpec& spec = p.ir.output_specs[i];
    const c10::IValue& e = eager.result.outputs.at(i);
    const c10::IValue& f = fp64.result.outputs.at(i);
    if (!e.isTensor()) continue;
    OutputVerdict ov;
    ov.name = ov.value = rank_output_name(p, spec);
    ov.role = std::string(output_kind_name(spec.kind));
    const c10::IValue cv = compiled_output(c, spec);
    if (!cv.isTensor()) {
      ov.verdict.pass = false;
      ov.verdict.level = Level::Fail;
      ov.verdict.reason = "no_compiled_value";
      ov.verdict.detail = c.failure.empty() ? "the compiled rank returned no value for it" : c.failure;
    } else {
      const at::Tensor ct = cv.toTensor(), et = e.toTensor(), ft = f.isTensor() ? f.toTensor() : at::Tensor();
      ov.verdict = judge(ct, et, ft, options.diff.rule);
      if (ft.defined() && ct.sizes() == ft.sizes()) {
        ov.compiled_to_fp64 = measure(ct, ft);
        ov.eager_to_fp64 = measure(et, ft);
      }
    }
    out.push_back(std::move(ov));
  }
  return out;
}

/// Inductor's communication passes and the value that turns each off: all off by default in torch 2.11-2.14, so the
/// search tries the ones the run turned on (`--inductor-config`).
const std::vector<std::pair<std::string, std::string>>& communication_passes() {
  static const std::vector<std::pair<std::string, std::string>> passes = {
      {"reorder_for_compute_comm_overlap", "False"}, {"bucket_all_gathers_fx", "'none'"}, {"bucket_reduce_scatters_fx", "'none'"},
      {"bucket_all_reduces_fx", "'none'"}, {"_fuse_ddp_communication", "False"}};
  return passes;
}

/// The value `config` ("key=value" entries, the last one wins) gives `key`, or nullopt.
std::optional<std::string> config_value(const std::vector<std::string>& config, const std::string& key) {
  std::optional<std::string> v;
  for (const std::string& kv : config)
    if (kv.rfind(key + "=", 0) == 0) v = kv.substr(key.size() + 1);
  return v;
}

/// "'none'" and "\"none\"" alike.
std::string unquoted(std::string v) {
  if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"') && v.back() == v.front()) v = v.substr(1, v.size() - 2);
  return v;
}

/// Each collective (not its wait) with the value the graph reads back: its wait's result, or its own when none waits.
struct Boundary {
  CollectiveCall call;
  ValueId result = kNoValue;
};

std::vector<Boundary> boundaries_of(const Graph& g) {
  std::vector<Boundary> out;
  const std::vector<CollectiveCall> calls = collective_calls(g);
  for (const CollectiveCall& c : calls) {
    if (c.op == CollectiveCall::Op::Wait) continue;
    Boundary b{c, g.node(c.node).output_values().at(0)};
    for (const CollectiveCall& w : calls)
      if (w.op == CollectiveCall::Op::Wait && w.input == b.result) b.result = g.node(w.node).output_values().at(0);
    out.push_back(b);
  }
  return out;
}

/// "float16" for Half: the name users write (torch.float16).
std::string dtype_word(at::ScalarType t) {
  switch (t) {
    case at::kHalf: return "float16";
    case at::kBFloat16: return "bfloat16";
    case at::kFloat: return "float32";
    case at::kDouble: return "float64";
    default: return c10::toString(t);
  }
}

double rms(const at::Tensor& t) { return t.numel() ? t.to(at::kDouble).pow(2).mean().sqrt().item<double>() : 0.0; }

/// How a collective's compiled result `out` on group position `pos` departs from the reference `ref` (fp64), given
/// every rank's compiled input (group order): the stable kind and one line of numbers.
std::pair<std::string, std::string> classify_collective(const CollectiveCall& c, size_t pos, const std::vector<at::Tensor>& inputs,
                                                        const at::Tensor& out, const at::Tensor& ref, const at::Tensor& eager) {
  const at::Tensor o = out.to(at::kDouble), r = ref.to(at::kDouble);
  const double scale_ref = std::max(rms(r), 1e-30);
  const at::Tensor own = inputs.at(pos).to(at::kDouble);
  if (own.sizes() == o.sizes() && rms(o.sub(own)) <= 1e-6 * std::max(rms(own), 1e-30) && rms(r.sub(own)) > 1e-3 * scale_ref)
    return {"read_before_wait", fmt::format("its result is its own input, unreduced (the reduction of {} ranks differs from it by rms {:.3g}): "
                                            "read before the collective landed", inputs.size(), rms(r.sub(own)))};
  if (o.sizes() == r.sizes()) {
    const double dot = o.mul(r).sum().item<double>(), rr = r.mul(r).sum().item<double>();
    const double s = rr > 0 ? dot / rr : 1.0;
    if (std::abs(s - 1) > 1e-3 && rms(o.sub(r.mul(s))) <= 1e-3 * scale_ref * std::abs(s))
      return {"scale", fmt::format("its result is {:.6g} x the reference's (rms of the rest {:.3g}): a double scaling", s, rms(o.sub(r.mul(s))))};
  }
  if (c.op == CollectiveCall::Op::AllReduce || c.op == CollectiveCall::Op::ReduceScatter) {
    const double off = rms(o.sub(eager.to(at::kDouble)));
    for (at::ScalarType d : {at::kHalf, at::kBFloat16}) {
      std::vector<at::Tensor> low;
      for (const at::Tensor& t : inputs) low.push_back(t.to(d));
      at::Tensor acc = low.front().clone();
      for (size_t i = 1; i < low.size(); ++i) acc = c.reduce == "max" ? at::maximum(acc, low[i]) : c.reduce == "min" ? at::minimum(acc, low[i])
                                                   : c.reduce == "product" ? acc.mul(low[i]) : acc.add(low[i]);
      if (c.reduce == "avg") acc = acc.div(static_cast<double>(low.size()));
      if (c.op == CollectiveCall::Op::ReduceScatter) acc = acc.chunk(static_cast<int64_t>(inputs.size()), 0).at(pos);
      if (acc.sizes() != o.sizes()) continue;
      const double sim = rms(o.sub(acc.to(at::kDouble)));
      if (sim * 4 <= off)
        return {"precision", fmt::format("its result matches the fold of the inputs rounded to {} (rms {:.3g}) and not the {} fold (rms {:.3g}): "
                                         "the collective ran in reduced precision", dtype_word(d), sim, dtype_word(out.scalar_type()), off)};
    }
  }
  if ((c.op == CollectiveCall::Op::AllGather || c.op == CollectiveCall::Op::ReduceScatter) && o.dim() > 0) {
    // Another rank's chunk where this rank's belongs.
    const int64_t n = static_cast<int64_t>(inputs.size());
    if (c.op == CollectiveCall::Op::ReduceScatter && r.dim() > 0) {
      at::Tensor full = inputs.front().to(at::kDouble).clone();
      for (size_t i = 1; i < inputs.size(); ++i) full = full.add(inputs[i].to(at::kDouble));
      if (c.reduce == "avg") full = full.div(static_cast<double>(n));
      auto chunks = full.chunk(n, 0);
      for (int64_t j = 0; j < n; ++j)
        if (j != static_cast<int64_t>(pos) && chunks[j].sizes() == o.sizes() && rms(o.sub(chunks[j])) <= 1e-3 * std::max(rms(chunks[j]), 1e-30))
          return {"offset", fmt::format("it holds chunk {} of the reduction, where chunk {} belongs", j, pos)};
    }
    if (c.op == CollectiveCall::Op::AllGather) {
      auto got = o.chunk(n, 0);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j)
          if (i != j && got[i].sizes() == inputs[j].sizes() && rms(got[i].sub(inputs[j].to(at::kDouble))) == 0 &&
              rms(got[i].sub(inputs[i].to(at::kDouble))) > 0)
            return {"offset", fmt::format("its chunk {} holds rank position {}'s input", i, j)};
    }
  }
  return {"value", fmt::format("its result differs from the fold of its inputs by rms {:.3g} (relative {:.3g})", rms(o.sub(r)), rms(o.sub(r)) / scale_ref)};
}

}  // namespace

DistResult diff_distributed(const std::string& dir, const DistOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  const Capture capture = read_capture(dir);
  DistResult result;
  result.dir = dir;
  result.world_size = capture.world_size;
  result.backend = capture.backend;
  result.compiled = options.diff.compiled;
  result.process_backend = options.process_backend;
  const int world = capture.world_size;
  for (int id : capture.graph_ids) {
    if (!options.graphs.empty() && std::find(options.graphs.begin(), options.graphs.end(), id) == options.graphs.end()) continue;
    DistGraphResult gr;
    gr.graph = id;
    const json& entry0 = capture.ranks[0].graphs.at(id);
    gr.kind = entry0.value("kind", std::string("graph"));
    gr.where = entry0.value("where", json()).is_string() ? entry0["where"].get<std::string>() : std::string();
    std::vector<Program> programs;
    std::vector<BoundInputs> bound;
    for (const RankFolder& f : capture.ranks) {
      const json& e = f.graphs.at(id);
      programs.push_back(load_program((f.folder / e.value("archive", std::string())).string()));
      if (!e.value("inputs", json()).is_string())
        throw Error(Error::Kind::BadInputs, fmt::format("{}: graph {} has no inputs file in the index", f.folder.string(), id));
      bound.push_back(bind_inputs(programs.back(), load_inputs((f.folder / e["inputs"].get<std::string>()).string())));
    }
    std::vector<const Program*> pp;
    std::vector<const BoundInputs*> bp;
    for (int r = 0; r < world; ++r) pp.push_back(&programs[static_cast<size_t>(r)]), bp.push_back(&bound[static_cast<size_t>(r)]);
    const std::vector<RankRun> eager = run_ranks_in_lockstep(pp, bp, Precision::Native, capture.groups);
    const std::vector<RankRun> fp64 = run_ranks_in_lockstep(pp, bp, Precision::Fp64, capture.groups);
    for (const CollectiveCall& c : collective_calls(programs[0].ir.graph)) {
      if (c.op == CollectiveCall::Op::Wait) continue;
      DistCollective dc{c.name, collective_op_name(c.op), c.group, c.reduce, first_source(programs[0], c.name), 0};
      const std::string value = programs[0].ir.graph.value(programs[0].ir.graph.node(c.node).output_values().at(0)).name;
      for (int r = 0; r < world; ++r) {
        auto e = eager[static_cast<size_t>(r)].collective_values.find(value);
        auto f = fp64[static_cast<size_t>(r)].collective_values.find(value);
        if (e != eager[static_cast<size_t>(r)].collective_values.end() && f != fp64[static_cast<size_t>(r)].collective_values.end() &&
            e->second.is_floating_point())
          dc.eager_max_relative = std::max(dc.eager_max_relative, measure(e->second, f->second).max_rel);
      }
      gr.collectives.push_back(dc);
    }
    if (options.diff.backend.on_wait) options.diff.backend.on_wait(fmt::format("compiling graph {} on {} ranks", id, world), 0);
    const std::vector<CompiledRank> compiled =
        run_compiled_ranks(pp, bp, options, capture, [](const Program& p) { return RegionSpec::whole_graph(p.ir); });
    const auto& specs = programs[0].ir.output_specs;
    for (int r = 0; r < world; ++r) {
      const Program& p = programs[static_cast<size_t>(r)];
      const CompiledRank& c = compiled[static_cast<size_t>(r)];
      DistRankResult rr;
      rr.rank = r;
      rr.archive = p.path;
      rr.compile_seconds = c.compile_seconds;
      rr.run_seconds = c.run_seconds;
      if (!c.failure.empty()) rr.compiled_failed = true, rr.compile_message = c.failure;
      rr.outputs = judge_rank_outputs(p, c, eager[static_cast<size_t>(r)], fp64[static_cast<size_t>(r)], options);
      for (const OutputVerdict& ov : rr.outputs) {
        if (counts_as_failing(ov.verdict, options.diff.fail_on_suspicious)) rr.diverged = true;
        else if (ov.verdict.level == Level::Suspicious) rr.suspicious = true;
      }
      if (options.rank_local) {
        RankLocal rl = rank_local_program(p, bound[static_cast<size_t>(r)], eager[static_cast<size_t>(r)]);
        rr.fed = rl.fed;
        if (options.diff.backend.on_wait)
          options.diff.backend.on_wait(fmt::format("graph {}, rank {}: its rank-local program", id, r), 0);
        rr.rank_local = diff(rl.program, rl.inputs, options.diff);
      }
      gr.diverged |= rr.diverged || (rr.rank_local && counts_as_failing(*rr.rank_local));
      gr.suspicious |= rr.suspicious || (rr.rank_local && result_level(*rr.rank_local) == Level::Suspicious);
      gr.compiled_failed |= rr.compiled_failed || (rr.rank_local && rr.rank_local->compiled_failed);
      gr.ranks.push_back(std::move(rr));
    }
    // What the reference makes equal on every rank must be equal on every compiled rank.
    for (size_t i = 0; i < specs.size(); ++i) {
      bool replicated = true;
      for (int r = 1; r < world && replicated; ++r) {
        const c10::IValue& a = fp64[0].result.outputs.at(i);
        const c10::IValue& b = fp64[static_cast<size_t>(r)].result.outputs.at(i);
        replicated = a.isTensor() && b.isTensor() && a.toTensor().sizes() == b.toTensor().sizes() && at::equal(a.toTensor(), b.toTensor());
      }
      if (!replicated) continue;
      DistAcrossRanks across;
      across.output = rank_output_name(programs[0], specs[i]);
      const c10::IValue c0 = compiled_output(compiled[0], specs[i]);
      if (!c0.isTensor()) continue;
      for (int r = 1; r < world; ++r) {
        const c10::IValue cr = compiled_output(compiled[static_cast<size_t>(r)], specs[i]);
        if (!cr.isTensor() || cr.toTensor().sizes() != c0.toTensor().sizes()) {
          across.equal = false;
          across.differing.push_back(r);
          continue;
        }
        if (!at::equal(cr.toTensor(), c0.toTensor())) {
          across.equal = false;
          across.differing.push_back(r);
          if (cr.toTensor().is_floating_point())
            across.max_abs = std::max(across.max_abs, measure(cr.toTensor(), c0.toTensor().to(at::kDouble)).max_abs);
        }
      }
      gr.across.push_back(std::move(across));
    }
    // Culprits: a rank-local op first; else the collectives; a replicated value that differs on one rank.
    bool rank_local_named = false;
    for (const DistRankResult& rr : gr.ranks) {
      if (!rr.rank_local || result_level(*rr.rank_local) == Level::Pass) continue;
      DistCulprit c;
      c.kind = "rank_local";
      c.graph = id;
      c.rank = rr.rank;
      const DiffResult& d = *rr.rank_local;
      if (d.localization) {
        const Culprit& k = d.localization->culprit;
        c.nodes = k.nodes, c.ops = k.ops, c.sources = k.sources, c.module_paths = k.module_paths;
        c.summary = fmt::format("graph {} ({}), rank {}: {}", id, gr.kind, rr.rank, k.summary);
      } else {
        c.summary = fmt::format("graph {} ({}), rank {}: its rank-local program diverges (no localization ran)", id, gr.kind, rr.rank);
      }
      rank_local_named = true;
      result.culprits.push_back(std::move(c));
    }
    std::vector<int> diverged;
    for (const DistRankResult& rr : gr.ranks)
      if ((rr.diverged || rr.suspicious) && !rr.compiled_failed) diverged.push_back(rr.rank);
    if (!rank_local_named && !diverged.empty()) {
      DistCulprit c;
      c.graph = id;
      c.rank = diverged.size() == 1 ? diverged[0] : -1;
      const std::vector<Boundary> bounds = boundaries_of(programs[0].ir.graph);
      if (!bounds.empty()) {
        // No rank-local program diverges (or none was diffed): probe the collectives' boundaries with one more compile of every rank that
        // also returns each collective's input and the result the graph reads back.
        if (options.diff.backend.on_wait) options.diff.backend.on_wait(fmt::format("graph {}: probing its collectives", id), 0);
        const std::vector<CompiledRank> probe = run_compiled_ranks(pp, bp, options, capture, [](const Program& p) {
          RegionSpec r = RegionSpec::whole_graph(p.ir);
          for (const Boundary& b : boundaries_of(p.ir.graph))
            for (ValueId v : {b.call.input, b.result})
              if (std::find(r.outputs.begin(), r.outputs.end(), v) == r.outputs.end()) r.outputs.push_back(v);
          return r;
        });
        auto value_of = [&](int r, ValueId v) -> at::Tensor {
          const CompiledRank& cr = probe[static_cast<size_t>(r)];
          if (!cr.outputs) return {};
          auto at = std::find(cr.region.outputs.begin(), cr.region.outputs.end(), v);
          return at == cr.region.outputs.end() ? at::Tensor() : cr.outputs->at(static_cast<size_t>(at - cr.region.outputs.begin())).toTensor();
        };
        const Graph& g0 = programs[0].ir.graph;
        for (const Boundary& b : bounds) {
          const std::vector<int>& members = capture.groups.at(b.call.group);
          std::vector<at::Tensor> inputs;
          for (int m : members) inputs.push_back(value_of(m, b.call.input));
          const std::string result_name = g0.value(b.result).name;
          for (int r = 0; r < world; ++r) {
            const at::Tensor in = value_of(r, b.call.input), out = value_of(r, b.result);
            if (!in.defined() || !out.defined()) continue;
            DistBoundary db;
            db.node = b.call.name;
            db.rank = r;
            db.input = judge(in, eager[static_cast<size_t>(r)].collective_inputs.at(b.call.name),
                             fp64[static_cast<size_t>(r)].collective_inputs.at(b.call.name), options.diff.rule);
            const at::Tensor ref_e = eager[static_cast<size_t>(r)].collective_values.at(result_name);
            const at::Tensor ref_f = fp64[static_cast<size_t>(r)].collective_values.at(result_name);
            db.output = judge(out, ref_e, ref_f, options.diff.rule);
            db.output_to_fp64 = measure(out, ref_f);
            const bool culprit = c.kind.empty() && db.input.level == Level::Pass && db.output.level != Level::Pass;
            gr.boundaries.push_back(db);
            if (!culprit) continue;
            auto pos = std::find(members.begin(), members.end(), r);
            bool all_inputs = std::all_of(inputs.begin(), inputs.end(), [](const at::Tensor& t) { return t.defined(); });
            auto [kind, detail] = all_inputs ? classify_collective(b.call, static_cast<size_t>(pos - members.begin()), inputs, out, ref_f, ref_e)
                                             : std::pair<std::string, std::string>{"value", "the other ranks' inputs were not probed"};
            // Another collective's result where this one's belongs: a bucket split at the wrong offset.
            for (const Boundary& other : bounds) {
              if (kind != "value" || other.call.name == b.call.name) continue;
              auto ref_other = fp64[static_cast<size_t>(r)].collective_values.find(g0.value(other.result).name);
              if (ref_other == fp64[static_cast<size_t>(r)].collective_values.end() || ref_other->second.numel() != out.numel()) continue;
              const at::Tensor o = out.to(at::kDouble).flatten(), x = ref_other->second.to(at::kDouble).flatten();
              if (rms(o.sub(x)) <= 1e-6 * std::max(rms(x), 1e-30))
                kind = "offset", detail = fmt::format("it holds the result of collective {}: a bucket split at the wrong offset", other.call.name);
            }
            c.kind = "collective";
            c.collective_kind = kind;
            c.rank = r;
            c.nodes = {b.call.name};
            c.ops = {g0.node(b.call.node).target};
            c.sources = {first_source(programs[0], b.call.name)};
            c.module_paths = {g0.node(b.call.node).source.module_path()};
            c.summary = fmt::format("graph {} ({}): collective {} ({}{} over group '{}'), {}: its inputs agree on every rank and its result "
                                    "{} on rank {}: {}", id, gr.kind, b.call.name, collective_op_name(b.call.op),
                                    b.call.reduce.empty() ? "" : ", " + b.call.reduce, b.call.group, kind,
                                    db.output.level == Level::Fail ? "fails" : "is suspicious", r, detail);
          }
        }
      }
      // A communication pass the run turned on: every rank compiled again without it, one pass at a time.
      // Also when a collective was named: the pass may be what broke it (a bucket split at the wrong offset).
      for (const auto& [key, off] : communication_passes()) {
        if (!c.kind.empty() && c.kind != "collective") break;
        const auto on = config_value(options.diff.backend.inductor_config, key);
        if (!on || unquoted(*on) == unquoted(off)) continue;
        DistOptions without = options;
        without.diff.backend.inductor_config.push_back(key + "=" + off);
        if (options.diff.backend.on_wait) options.diff.backend.on_wait(fmt::format("graph {}: every rank without {}", id, key), 0);
        const std::vector<CompiledRank> again =
            run_compiled_ranks(pp, bp, without, capture, [](const Program& p) { return RegionSpec::whole_graph(p.ir); });
        bool agrees = true;
        for (int r = 0; r < world && agrees; ++r) {
          if (!again[static_cast<size_t>(r)].failure.empty()) agrees = false;
          for (const OutputVerdict& ov : judge_rank_outputs(programs[static_cast<size_t>(r)], again[static_cast<size_t>(r)],
                                                             eager[static_cast<size_t>(r)], fp64[static_cast<size_t>(r)], options))
            if (ov.verdict.level != Level::Pass) agrees = false;
        }
        gr.passes_tried.push_back(fmt::format("{}={}: {}", key, off, agrees ? "every rank agrees" : "still diverges"));
        if (!agrees) continue;
        const std::string named = c.kind == "collective" ? fmt::format(". It breaks collective {} ({}): {}", c.nodes.at(0), c.collective_kind,
                                                                       c.summary.substr(c.summary.find(": ") + 2)) : "";
        c.kind = "communication_pass";
        c.summary = fmt::format("graph {} ({}): the communication pass {} (turned on: {}={}) makes the compiled step {} on rank{} {}; with "
                                "{}={} every rank agrees (one compile of every rank without it); in your program: "
                                "torch._inductor.config.{} = {}", id, gr.kind, key, key, *on, gr.diverged ? "diverge" : "suspicious",
                                diverged.size() > 1 ? "s" : "", fmt::join(diverged, ", "), key, off, key, off) + named;
        break;
      }
      if (c.kind.empty() && options.rank_local) {
        c.kind = "collectives";
        std::vector<std::string> names;
        for (const DistCollective& k : gr.collectives) names.push_back(fmt::format("{} ({} over group '{}')", k.node, k.op, k.group));
        c.summary = fmt::format("graph {} ({}): every rank's rank-local program agrees with its collectives fed from the reference{}, "
                                "but the compiled step {} on rank{} {}: what reads the collectives' results ({}) in the "
                                "compiled code, or a communication pass around them", id, gr.kind,
                                gr.boundaries.empty() ? "" : " and every collective's result agrees", gr.diverged ? "diverges" : "is suspicious",
                                diverged.size() > 1 ? "s" : "",
                                fmt::join(diverged, ", "), names.empty() ? std::string("none in this graph") : fmt::format("{}", fmt::join(names, ", ")));
      } else if (c.kind.empty()) {
        c.kind = "inconclusive";
        c.summary = fmt::format("graph {} ({}): the compiled step {} on rank{} {}, every collective's result agrees; the rank-local "
                                "programs were not diffed (--no-rank-local)", id, gr.kind, gr.diverged ? "diverges" : "is suspicious",
                                diverged.size() > 1 ? "s" : "", fmt::join(diverged, ", "));
      }
      result.culprits.push_back(std::move(c));
    }
    for (const DistAcrossRanks& a : gr.across)
      if (!a.equal && world > 2 && a.differing.size() == 1) {
        DistCulprit c;
        c.kind = "rank_alone";
        c.graph = id;
        c.rank = a.differing[0];
        c.summary = fmt::format("graph {} ({}): output '{}', equal on every rank in the reference, differs on rank {} alone (by up to {:.3g})",
                                id, gr.kind, a.output, c.rank, a.max_abs);
        result.culprits.push_back(std::move(c));
      }
    result.diverged |= gr.diverged || std::any_of(gr.across.begin(), gr.across.end(), [](const DistAcrossRanks& a) { return !a.equal; });
    result.compiled_failed |= gr.compiled_failed;
    if (gr.diverged) gr.suspicious = false;
    result.suspicious |= gr.suspicious;
    result.graphs.push_back(std::move(gr));
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace pt2diff
