// engine/worker/worker_backend.cpp — the engine's side of the worker protocol: start, hello, load,
// compile, run, shutdown; tensors through torch.save files in a private directory; every failure typed.
#include "engine/worker/worker_backend.h"

#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "engine/worker/worker_process.h"
#include "engine/worker/worker_server.h"
#include "engine/execution/op_catalog.h"
#include "engine/inspect/autocast_json.h"
#include "engine/load/archive.h"
#include "graphs/inline_region.h"
#include "engine/load/torch_save.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// A private directory for tensor files: in memory (/dev/shm) where available.
fs::path make_exchange_dir() {
  std::vector<fs::path> bases;
  if (fs::is_directory("/dev/shm") && access("/dev/shm", W_OK) == 0) bases.push_back("/dev/shm");
  bases.push_back(fs::temp_directory_path());
  for (const fs::path& base : bases) {
    std::string pattern = (base / "pt2diff-XXXXXX").string();
    if (mkdtemp(pattern.data())) return pattern;
  }
  throw Error(Error::Kind::Usage, "cannot create a private temporary directory for the worker's tensors (set TMPDIR)");
}

/// The worker's TMPDIR, on disk (AOTI packages and what their loader unpacks can be large): everything it and
/// the compilers it starts leave there goes with the backend, even when the worker was killed before it could
/// clean up (a SIGKILL after a timeout, the process group at shutdown).
fs::path make_scratch_dir() {
  std::string pattern = (fs::temp_directory_path() / "pt2diff-worker-XXXXXX").string();
  if (mkdtemp(pattern.data())) return pattern;
  throw Error(Error::Kind::Usage, fmt::format("cannot create a scratch directory for the worker in {} (set TMPDIR to a "
                                              "writable directory)", fs::temp_directory_path().string()));
}

std::string last_lines(const fs::path& file, size_t count) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line.find("Warning") == std::string::npos) lines.push_back(line);
  std::string out;
  for (size_t i = lines.size() > count ? lines.size() - count : 0; i < lines.size(); ++i) out += (out.empty() ? "" : " | ") + lines[i];
  return out;
}

/// For a worker killed by a signal in native code, what faulthandler printed: "Fatal Python error:
/// Segmentation fault in launch (torch/_inductor/.../runner.py:41), called from run (inductor.py:188)":
/// the innermost Python frame and, when that is a library's, the innermost of the worker's own code (a
/// frame outside the Python installation, or pt2diff_worker's wherever it is installed). "" if none.
std::string fatal_error(const fs::path& file) {
  static const std::regex frame_line(R"re(^  File "([^"]*)", line (\d+) in (.*)$)re");
  std::ifstream in(file);
  std::string fatal;
  std::vector<std::string> lines;  // the crashing thread's frames, innermost first
  bool in_stack = false, done = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Fatal Python error:", 0) == 0) {
      fatal = line, lines.clear(), in_stack = false, done = false;
    } else if (!fatal.empty() && !done) {
      // The crashing thread is "Current thread 0x... (most recent call first):", printed after the others.
      if (line.rfind("Current thread", 0) == 0) in_stack = true;
      else if (in_stack && line.rfind("  File ", 0) == 0) lines.push_back(line);
      else if (in_stack) done = true;
    }
  }
  if (fatal.empty()) return "";
  auto describe = [](const std::string& line, bool* library) {
    std::smatch m;
    if (!std::regex_match(line, m, frame_line)) return line;
    const std::string path = m[1].str();
    if (library)
      *library = path.find("pt2diff_worker") == std::string::npos &&
                 (path.find("/lib/python3") != std::string::npos || path.find("/site-packages/") != std::string::npos);
    const std::string base = fs::path(path).filename().string();
    return fmt::format("{} ({}:{})", m[3].str(), base, m[2].str());
  };
  if (lines.empty()) return fatal;
  bool library = false;
  std::string where = fatal + " in " + describe(lines[0], &library);
  for (size_t i = 1; library && i < lines.size(); ++i) {
    bool lib = false;
    const std::string d = describe(lines[i], &lib);
    if (!lib) return where + ", called from " + d;
  }
  return where;
}

/// A torch.save file is a zip, which ends with its end-of-central-directory record (within its last
/// 22 + 65535 bytes): a zip without one was cut short (a worker killed mid-write, a full disk).
/// Reads its first two bytes and its tail only; the file's size in `size`.
bool file_cut_short(const fs::path& p, uintmax_t& size) {
  std::error_code ec;
  size = fs::file_size(p, ec);
  if (ec) return false;
  std::ifstream in(p, std::ios::binary);
  std::string head(2, '\0');
  if (size < 2 || !in.read(head.data(), 2) || head != "PK") return false;  // not a zip at all: the reader says so
  const uintmax_t tail = std::min<uintmax_t>(size, 22 + 65535);
  std::string end(static_cast<size_t>(tail), '\0');
  in.seekg(static_cast<std::streamoff>(size - tail));
  if (!in.read(end.data(), static_cast<std::streamsize>(tail))) return false;
  return end.find("PK\x05\x06") == std::string::npos;
}

/// "float32[4, 16]"; "a Double" for a value that is not a tensor.
std::string describe_value(const c10::IValue& v) {
  if (!v.isTensor()) return "a " + v.tagKind();
  const at::Tensor& t = v.toTensor();
  return fmt::format("{}[{}]", dtype_name(static_cast<DType>(t.scalar_type())), fmt::join(t.sizes(), ", "));
}

bool is_symbol(const std::string& expr) {
  if (expr.empty() || !(std::isalpha(static_cast<unsigned char>(expr[0])) || expr[0] == '_')) return false;
  return std::all_of(expr.begin(), expr.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

/// Dynamic sizes ("s77") as the region's inputs have them in this run.
std::map<std::string, int64_t> bound_symbols(const Graph& g, const RegionSpec& region, const std::vector<c10::IValue>& inputs) {
  std::map<std::string, int64_t> bound;
  for (size_t i = 0; i < region.inputs.size() && i < inputs.size(); ++i) {
    const Value& v = g.value(region.inputs[i]);
    if (!v.meta || !inputs[i].isTensor()) continue;
    const at::Tensor& t = inputs[i].toTensor();
    if (static_cast<size_t>(t.dim()) != v.meta->sizes.size()) continue;
    for (size_t d = 0; d < v.meta->sizes.size(); ++d)
      if (is_symbol(v.meta->sizes[d].expr)) bound.emplace(v.meta->sizes[d].expr, t.size(static_cast<int64_t>(d)));
  }
  return bound;
}

/// Why `got` cannot be the value `expected` of the region: a tensor of another dtype or shape, or not a
/// tensor at all (None is accepted: a worker may not compute an output nobody reads). "" when it can.
/// Sizes are checked where known: static ones, and symbols bound by the region's inputs.
std::string output_mismatch(const Value& expected, const c10::IValue& got, const std::map<std::string, int64_t>& bound) {
  if (expected.kind != ValueKind::Tensor || !expected.meta || got.isNone()) return "";
  const TensorMeta& meta = *expected.meta;
  const std::string wanted = fmt::format("{}{}", dtype_name(meta.dtype), meta.shape_str());
  const std::string mismatch = fmt::format("output '{}' is {}, expected {}", expected.name, describe_value(got), wanted);
  if (!got.isTensor()) return mismatch;
  const at::Tensor& t = got.toTensor();
  if (meta.dtype != DType::Undefined && static_cast<DType>(t.scalar_type()) != meta.dtype) return mismatch;
  if (static_cast<size_t>(t.dim()) != meta.sizes.size()) return mismatch;
  for (size_t d = 0; d < meta.sizes.size(); ++d) {
    const SymInt& size = meta.sizes[d];
    std::optional<int64_t> want = size.value;
    if (!want && bound.count(size.expr)) want = bound.at(size.expr);
    if (want && t.size(static_cast<int64_t>(d)) != *want) return mismatch;
  }
  return "";
}

/// The kernel map a `run` with `observed_file` gave: the reply's `observed` payloads, aligned with the
/// tensors of the file. A map that cannot be read is unavailable, said why: the verdict stands without it.
KernelMap read_kernel_map(const json& reply, const std::string& file, const std::string& label) {
  KernelMap map;
  std::error_code ec;
  try {
    const json& infos = reply.at("observed");
    std::vector<c10::IValue> tensors;
    try {
      tensors = values_from_torch_save_file(file);
    } catch (...) {
      fs::remove(file, ec);
      throw;
    }
    fs::remove(file, ec);
    if (tensors.size() != infos.size())
      return {fmt::format("the {} observed {} buffers but described {}", label, tensors.size(), infos.size()), {}, {}};
    for (size_t i = 0; i < infos.size(); ++i) {
      const json& info = infos[i];
      if (!tensors[i].isTensor()) continue;
      ObservedBuffer b;
      b.kernel = info.value("kernel", "");
      b.call = info.value("call", b.kernel);
      if (info.contains("kernel_nodes") && info["kernel_nodes"].is_array())
        for (const json& n : info["kernel_nodes"])
          if (n.is_string()) b.kernel_nodes.push_back(n.get<std::string>());
      b.buffer = info.value("buffer", "");
      b.node = info.contains("node") && info["node"].is_string() ? info["node"].get<std::string>() : "";
      b.part_of = info.contains("part_of") && info["part_of"].is_string() ? info["part_of"].get<std::string>() : "";
      b.index = info.contains("index") && info["index"].is_number_integer() ? info["index"].get<int64_t>() : -1;
      b.value = tensors[i].toTensor();
      map.buffers.push_back(std::move(b));
    }
    if (reply.contains("code") && reply["code"].is_object())  // each generated kernel's source (optional)
      for (const auto& [kernel, code] : reply["code"].items())
        if (code.is_string()) map.code[kernel] = code.get<std::string>();
  } catch (const std::exception& e) {
    fs::remove(file, ec);
    return {fmt::format("the {}'s kernel map is unreadable: {}", label, first_line(e.what())), {}, {}};
  }
  return map;
}

}  // namespace

class WorkerRegion final : public CompiledRegion {
 public:
  /// `map_status`: for a region compiled with RegionSpec::observe, "" when the worker observes its code,
  /// else why not (kept as the kernel map's `unavailable`).
  WorkerRegion(WorkerBackend& backend, std::string id, RegionSpec region, std::string map_status, std::optional<ShapeCompile> shapes)
      : backend_(backend), id_(std::move(id)), region_(std::move(region)), shapes_(std::move(shapes)) {
    map_.unavailable = std::move(map_status);
  }
  std::vector<c10::IValue> run(const std::vector<c10::IValue>& inputs) override {
    const bool observe = region_.observe && map_.unavailable.empty();
    return backend_.run(id_, region_, inputs, last_run_seconds_, observe ? &map_ : nullptr, shapes_ ? &*shapes_ : nullptr);
  }
  KernelMap kernel_map() const override { return map_; }
  std::optional<ShapeCompile> shapes() const override { return shapes_; }
  std::optional<std::vector<CompilerDecision>> decisions() const override { return decisions_; }
  std::optional<std::vector<CompilerDecision>> decisions_;  ///< the compile reply's `decisions`, when asked

 private:
  WorkerBackend& backend_;
  std::string id_;
  RegionSpec region_;
  KernelMap map_;
  std::optional<ShapeCompile> shapes_;
};

/// A compile reply's `decisions` (docs/worker-protocol.md), nullopt when absent or not a list.
std::optional<std::vector<CompilerDecision>> read_decisions(const json& reply) {
  if (!reply.contains("decisions") || !reply["decisions"].is_array()) return std::nullopt;
  std::vector<CompilerDecision> out;
  for (const json& d : reply["decisions"]) {
    if (!d.is_object()) continue;
    CompilerDecision c;
    c.subsystem = d.value("subsystem", std::string());
    c.index = d.value("index", size_t{0});
    c.what = d.value("what", std::string());
    if (d.contains("nodes") && d["nodes"].is_array())
      for (const json& n : d["nodes"])
        if (n.is_string()) c.nodes.push_back(n.get<std::string>());
    out.push_back(std::move(c));
  }
  return out;
}

/// A compile reply's `shapes` (docs/worker-protocol.md), nullopt when absent or not an object.
std::optional<ShapeCompile> read_shapes(const json& reply) {
  if (!reply.contains("shapes") || !reply["shapes"].is_object()) return std::nullopt;
  const json& j = reply["shapes"];
  auto bound = [](const json& d, const char* key) -> std::optional<int64_t> {
    return d.contains(key) && d[key].is_number_integer() ? std::optional<int64_t>(d[key].get<int64_t>()) : std::nullopt;
  };
  auto dims = [&](const char* key, const char* name_key) {
    std::vector<DynamicDim> out;
    if (!j.contains(key) || !j[key].is_array()) return out;
    for (const json& d : j[key]) {
      if (!d.is_object()) continue;
      DynamicDim dim;
      dim.input = d.value(name_key, "");
      dim.dim = d.contains("dim") && d["dim"].is_number_integer() ? d["dim"].get<int64_t>() : -1;
      dim.symbol = d.value("symbol", "");
      dim.min = bound(d, "min");
      dim.max = bound(d, "max");
      out.push_back(std::move(dim));
    }
    return out;
  };
  ShapeCompile s;
  s.mode = j.value("mode", "");
  s.why_static = j.value("why_static", "");
  s.note = j.value("note", "");
  s.dims = dims("dims", "input");
  s.symbols = dims("symbols", "source");
  if (j.contains("guards") && j["guards"].is_array())
    for (const json& g : j["guards"])
      if (g.is_string()) s.guards.push_back(g.get<std::string>());
  return s;
}

struct WorkerBackend::Impl {
  const Program& program;
  std::vector<std::string> argv;
  std::string label;
  BackendOptions options;
  fs::path dir;
  fs::path scratch;                          ///< the worker's TMPDIR (make_scratch_dir)
  std::string server_launcher;               ///< the stock launcher that can start a worker server, or empty
  std::unique_ptr<WorkerProcess> process;
  std::set<ValueId> state_values;            ///< weights: the worker reads them from the archive itself
  std::map<std::string, json> compiles;      ///< region id → its compile request, replayed after a restart
  std::set<std::string> compiled_here;       ///< regions the current worker process has compiled
  int restarts = 0;
  double startup_seconds = 0;                ///< spent in start(), every start that got as far as a loaded archive
  bool dead = false;                         ///< died after its one restart: every request fails fast
  int next_id = 0;
  int files = 0;

  Impl(const Program& p, std::vector<std::string> a, std::string l, const BackendOptions& o)
      : program(p), argv(std::move(a)), label(std::move(l)), options(o), dir(make_exchange_dir()), scratch(make_scratch_dir()) {
    for (const InputSpec& spec : program.ir.input_specs)
      if (spec.kind == InputSpec::Kind::Parameter || spec.kind == InputSpec::Kind::Buffer ||
          spec.kind == InputSpec::Kind::TensorConstant)
        for (ValueId v : spec.arg.values()) state_values.insert(v);
  }

  ~Impl() {
    if (process) {
      // A polite shutdown; the process group is killed by ~WorkerProcess either way.
      if (process->write_line(R"({"op": "shutdown"})")) {
        std::string line;
        process->read_line(line, 5, nullptr);
      }
      process.reset();
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::remove_all(scratch, ec);
  }

  fs::path stderr_log() const { return dir / "worker-stderr.log"; }

  /// The path the worker loads the archive from: the program's file, or for a program loaded from
  /// memory a copy of its bytes in the exchange directory (private, removed with the backend).
  std::string archive_path() const {
    if (!program.archive_bytes) return fs::absolute(program.path).string();
    const fs::path copy = dir / "archive.pt2";
    if (!fs::exists(copy)) {
      std::ofstream f(copy, std::ios::binary);
      if (!f.write(program.archive_bytes->data(), static_cast<std::streamsize>(program.archive_bytes->size())) || !(f.flush()))
        throw BackendFailure(BackendFailure::Kind::Unusable,
                             fmt::format("cannot write the archive for the {} to {} (is {} full?)", label, copy.string(),
                                         dir.parent_path().string()));
    }
    return copy.string();
  }

  std::string died_message(const std::string& activity) {
    std::string how = process ? process->exit_description() : "did not start";
    std::string tail = fatal_error(stderr_log());
    if (tail.empty()) tail = last_lines(stderr_log(), 3);
    return fmt::format("the {} died while {} ({}){}", label, activity, how, tail.empty() ? "" : ": " + tail);
  }

  /// One request and its reply, on the running worker. Death and timeouts are thrown typed.
  json exchange(json req, const std::string& activity) {
    req["id"] = ++next_id;
    if (!process->write_line(req.dump())) throw BackendFailure(BackendFailure::Kind::WorkerDied, died_message(activity));
    std::string line;
    auto tick = [&](double elapsed) {
      if (options.on_wait) options.on_wait(activity, elapsed);
    };
    switch (process->read_line(line, options.timeout_seconds, tick)) {
      case WorkerProcess::Read::Closed: throw BackendFailure(BackendFailure::Kind::WorkerDied, died_message(activity));
      case WorkerProcess::Read::TimedOut:
        process->kill();
        process.reset();
        compiled_here.clear();
        throw BackendFailure(BackendFailure::Kind::TimedOut,
                             fmt::format("the {} gave no answer within {:g} s while {} and was killed (raise --timeout if it "
                                         "is only slow)", label, options.timeout_seconds, activity));
      case WorkerProcess::Read::Line: break;
    }
    json reply;
    try {
      reply = json::parse(line);
    } catch (const json::exception&) {
      throw BackendFailure(BackendFailure::Kind::RunFailed,
                           fmt::format("the {} answered with a line that is not JSON while {}: '{}' (a worker must keep "
                                       "stdout for the protocol)", label, activity, line.substr(0, 200)));
    }
    if (!reply.is_object() || reply.value("id", -1) != req["id"].get<int>())
      throw BackendFailure(BackendFailure::Kind::RunFailed,
                           fmt::format("the {} answered out of turn while {}: {}", label, activity, line.substr(0, 200)));
    return reply;
  }

  void start() {
    const auto began = std::chrono::steady_clock::now();
    process.reset();
    compiled_here.clear();
    try {
      // A CPU worker only: a CUDA worker's driver maps host memory RLIMIT_DATA may count (not yet tried on a GPU).
      const bool on_cpu = options.device.rfind("cuda", 0) != 0;
      const std::vector<std::string> environment{"TMPDIR=" + scratch.string()};
      // The worker server forks CPU workers only: a CUDA context cannot cross a fork, and a server never makes
      // one, but its imports on a CUDA build are not yet tried there (docs/worker-protocol.md).
      if (on_cpu && !server_launcher.empty() && worker_server_enabled())
        process = start_served_worker(argv, server_launcher, stderr_log().string(), options.memory_limit, environment);
      if (process && options.nice > 0)  // forked by the server: ours plus `nice`, as ::nice() does in a child we fork
        (void)setpriority(PRIO_PGRP, process->pid(), std::min(19, getpriority(PRIO_PROCESS, 0) + options.nice));
      if (!process)
        process = std::make_unique<WorkerProcess>(argv, stderr_log().string(), on_cpu ? options.memory_limit : 0, environment,
                                                  options.nice);
    } catch (const std::exception& e) {
      throw BackendFailure(BackendFailure::Kind::Unusable, fmt::format("cannot start the {}: {}", label, e.what()));
    }
    const std::string starting = "starting the " + label;
    json hello = checked(exchange({{"op", "hello"}}, starting), starting, BackendFailure::Kind::Unusable);
    if (hello.value("protocol", 0) != 1)
      throw BackendFailure(BackendFailure::Kind::Unusable,
                           fmt::format("the {} speaks protocol {}, pt2diff speaks 1", label, hello.value("protocol", 0)));
    json libraries = json::array();
    for (const std::string& l : options.op_libraries) libraries.push_back(fs::absolute(l).string());
    json fused_attention = json::array();  // what the worker runs as math attention when it compiles for the CPU
    for (const std::string& op : cuda_fused_attention_ops()) fused_attention.push_back("aten::" + op);
    // Autocast regions the engine inlined into the graph it runs (graphs/inline_region.h): the worker builds
    // the same graph from the engine's names, and says what it built, which must be the engine's graph.
    const std::vector<InlinedRegion> inlined = inlined_regions(program.ir.graph);
    json load = {{"op", "load"}, {"archive", archive_path()}, {"model", program.model_name}, {"device", options.device},
                 {"op_libraries", libraries}, {"cuda_fused_attention", fused_attention}};
    if (!inlined.empty()) load["inline_autocast"] = inlined_json(inlined);
    if (options.process_group) {
      const ProcessGroupSpec& pg = *options.process_group;
      json groups = json::array();
      for (const auto& g : pg.groups) groups.push_back({{"name", g.name}, {"ranks", g.ranks}});
      load["process_group"] = {{"backend", pg.backend}, {"init_method", pg.init_method}, {"rank", pg.rank},
                               {"world_size", pg.world_size}, {"timeout", pg.timeout_seconds}, {"groups", groups}};
    }
    json reply = checked(exchange(load, "loading the archive"), "loading the archive", BackendFailure::Kind::Unusable);
    if (!inlined.empty()) check_inlined(inlined, reply);
    startup_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  }

  /// The load reply's `inlined`: per region, the engine's names of the op nodes the worker made of its body,
  /// in graph order. They must be the engine's inlined nodes in the engine's order, else compiled regions
  /// would hold other ops than the engine's runs: the worker is then unusable.
  void check_inlined(const std::vector<InlinedRegion>& inlined, const json& reply) {
    const json got = reply.value("inlined", json());
    for (const InlinedRegion& r : inlined) {
      std::vector<std::string> want;
      for (const auto& node : r.nodes) want.push_back(node.second);
      const json built = got.is_object() ? got.value(r.region, json()) : json();
      if (!built.is_array())
        throw BackendFailure(BackendFailure::Kind::Unusable,
                             fmt::format("the {} did not inline the autocast region {} (no \"inlined\" for it in its load reply: "
                                         "docs/worker-protocol.md)", label, r.region));
      if (built != json(want))
        throw BackendFailure(BackendFailure::Kind::Unusable,
                             fmt::format("the {} inlined the autocast region {} as {} where pt2diff has {}: the two graphs "
                                         "disagree (a bug: report it with the archive)", label, r.region, built.dump(), json(want).dump()));
    }
  }

  /// The reply when ok; otherwise its failure, typed by what the worker says went wrong.
  json checked(json reply, const std::string& activity, BackendFailure::Kind otherwise) {
    if (reply.value("ok", false)) return reply;
    const std::string kind = reply.value("error", std::string("unknown"));
    const std::string message = first_line(reply.value("message", std::string()));
    BackendFailure::Kind k = kind == "compile_failed"  ? BackendFailure::Kind::CompileFailed
                             : kind == "run_failed"    ? BackendFailure::Kind::RunFailed
                             : kind == "out_of_memory" ? BackendFailure::Kind::OutOfMemory
                                                       : otherwise;
    if (k == BackendFailure::Kind::OutOfMemory)
      throw BackendFailure(k, fmt::format("the {} ran out of memory while {}: {}; raise --max-memory (now {}), or use "
                                          "smaller inputs", label, activity, message,
                                          options.memory_limit > 0 ? fmt::format("{:.1f} GiB per process", options.memory_limit / 1073741824.0)
                                                                   : std::string("no limit")));
    throw BackendFailure(k, fmt::format("{} ({} while {}): {}", label, kind, activity, message));
  }

  /// Sends a request to a live worker, starting it first; a death is survived by one restart.
  json request(const json& req, const std::string& activity, BackendFailure::Kind otherwise, const std::string& region = "") {
    if (dead) throw BackendFailure(BackendFailure::Kind::WorkerDied, fmt::format("the {} died twice: no more requests", label));
    for (;;) {
      try {
        if (!process) start();
        if (!region.empty() && !compiled_here.count(region)) {
          checked(exchange(compiles.at(region), "compiling " + region + " again after a restart"), activity,
                  BackendFailure::Kind::CompileFailed);
          compiled_here.insert(region);
        }
        return checked(exchange(req, activity), activity, otherwise);
      } catch (const BackendFailure& f) {
        if (f.kind() != BackendFailure::Kind::WorkerDied) throw;
        process.reset();
        compiled_here.clear();
        if (restarts >= 1) {
          dead = true;
          throw;
        }
        ++restarts;  // once: a worker that dies twice on the same request would die a third time
      }
    }
  }

  std::string write_values(const RegionSpec& region, const std::vector<c10::IValue>& values, const std::string& stem) {
    const Graph& g = program.ir.graph;
    std::vector<std::pair<std::string, c10::IValue>> named;
    for (size_t i = 0; i < region.inputs.size(); ++i)
      if (!state_values.count(region.inputs[i])) named.emplace_back(g.value(region.inputs[i]).name, values.at(i));
    fs::path p = dir / fmt::format("{}-{}.pt", stem, ++files);
    if (!write_torch_save(p.string(), named))
      throw BackendFailure(BackendFailure::Kind::RunFailed, fmt::format("cannot write {} (disk full?)", p.string()));
    return p.string();
  }
};

WorkerBackend::WorkerBackend(const Program& program, std::vector<std::string> argv, std::string label, std::string name,
                             const BackendOptions& options, std::string server_launcher)
    : impl_(std::make_unique<Impl>(program, std::move(argv), std::move(label), options)), name_(std::move(name)) {
  impl_->server_launcher = std::move(server_launcher);
}

WorkerBackend::~WorkerBackend() = default;

namespace {

/// A WorkerBackend's worker with other compiler settings (WorkerBackend::with_compiler_settings).
class WorkerSettingsView final : public Backend {
 public:
  WorkerSettingsView(WorkerBackend& backend, const BackendOptions& settings) : backend_(backend), settings_(settings) {}
  std::string name() const override { return backend_.name(); }
  bool observes() const override { return backend_.observes(); }
  bool leaves_eager() const override { return backend_.leaves_eager(); }
  std::unique_ptr<CompiledRegion> compile(const RegionSpec& region, const std::vector<c10::IValue>& example_inputs) override {
    auto compiled = backend_.compile_with(region, example_inputs, settings_);
    last_compile_seconds_ = backend_.last_compile_seconds();
    return compiled;
  }

 private:
  WorkerBackend& backend_;
  BackendOptions settings_;
};

}  // namespace

std::unique_ptr<Backend> WorkerBackend::with_compiler_settings(const BackendOptions& options) {
  return std::make_unique<WorkerSettingsView>(*this, options);
}

std::unique_ptr<CompiledRegion> WorkerBackend::compile(const RegionSpec& region, const std::vector<c10::IValue>& example_inputs) {
  return compile_with(region, example_inputs, impl_->options);
}

namespace {

/// A compile's settings as the worker reads them: the Inductor config ("key" -> Python literal) and the torch globals
/// the compiled code reads at compile and at run time (matmul precision, TF32).
std::pair<json, json> compile_settings_json(const BackendOptions& settings) {
  json config = json::object();
  for (const std::string& kv : settings.inductor_config) {
    auto eq = kv.find('=');
    config[kv.substr(0, eq)] = eq == std::string::npos ? "True" : kv.substr(eq + 1);
  }
  json globals = json::object();
  if (!settings.matmul_precision.empty()) globals["matmul_precision"] = settings.matmul_precision;
  if (settings.no_tf32) globals["tf32"] = false;
  return {config, globals};
}

}  // namespace

std::unique_ptr<CompiledRegion> WorkerBackend::compile_with(const RegionSpec& region, const std::vector<c10::IValue>& example_inputs,
                                                            const BackendOptions& settings) {
  const Graph& g = impl_->program.ir.graph;
  const std::string id = fmt::format("region{}", impl_->compiles.size() + 1);
  json nodes = json::array(), inputs = json::array(), outputs = json::array();
  for (NodeId n : region.nodes) nodes.push_back(g.node(n).name);
  for (ValueId v : region.inputs) inputs.push_back(g.value(v).name);
  for (ValueId v : region.outputs) outputs.push_back(g.value(v).name);
  auto [config, globals] = compile_settings_json(settings);
  json req = {{"op", "compile"}, {"region", id},        {"nodes", nodes},   {"inputs", inputs},
              {"outputs", outputs}, {"exploded", region.exploded}, {"config", config}, {"settings", globals},
              {"dynamic", !settings.static_shapes},
              {"example_inputs", impl_->write_values(region, example_inputs, id + "-example")}};
  if (region.observe) req["observe"] = true;
  if (settings.decisions) {
    const DecisionFilter& f = *settings.decisions;
    req["decisions"] = {{"subsystem", f.subsystem}, {"limit", f.limit}, {"skip", f.skip}, {"skip_what", f.skip_what}};
  }
  if (!region.eager.empty()) {
    json eager = json::array();
    for (NodeId n : region.eager) eager.push_back(g.node(n).name);
    req["eager"] = eager;
  }
  impl_->compiles[id] = req;
  const std::string activity = "compiling " + region.describe(g);
  json reply = impl_->request(req, activity, BackendFailure::Kind::CompileFailed);
  impl_->compiled_here.insert(id);
  last_compile_seconds_ = reply.value("seconds", 0.0);
  if (!region.eager.empty() && !(reply.contains("eager") && reply["eager"].is_number_integer() &&
                                 reply["eager"].get<size_t>() == region.eager.size()))
    throw BackendFailure(BackendFailure::Kind::Unusable,
                         fmt::format("the {} did not say it left the {} node{} asked eager (no \"eager\" count in its compile "
                                     "reply: docs/worker-protocol.md)", impl_->label, region.eager.size(),
                                     region.eager.size() == 1 ? "" : "s"));
  std::string map_status;  // the kernel map: "available", why not, or absent (a worker that does not offer it)
  if (region.observe) {
    map_status = reply.contains("kernel_map") && reply["kernel_map"].is_string() ? reply["kernel_map"].get<std::string>() : "";
    map_status = map_status == "available" ? ""
                 : map_status.empty()      ? fmt::format("the {} does not offer it (no kernel_map in its compile reply: "
                                                         "docs/worker-protocol.md)", impl_->label)
                                           : fmt::format("the {} cannot give it: {}", impl_->label, map_status);
  }
  auto compiled = std::make_unique<WorkerRegion>(*this, id, region, map_status, read_shapes(reply));
  compiled->decisions_ = read_decisions(reply);
  return compiled;
}

double WorkerBackend::startup_seconds() const { return impl_->startup_seconds; }

void WorkerBackend::start_ahead() {
  if (impl_->process || impl_->dead) return;
  try {
    impl_->start();
  } catch (const BackendFailure&) {
    impl_->process.reset();  // compile() starts it again and reports what failed, as without start_ahead
  }
}

std::vector<std::string> WorkerBackend::export_region(const RegionSpec& region, const std::vector<c10::IValue>& inputs,
                                                    const std::string& archive, const std::string& inputs_file, UnitTest* test,
                                                    Artifacts* artifacts) {
  const Graph& g = impl_->program.ir.graph;
  json nodes = json::array(), in = json::array(), out = json::array();
  for (NodeId n : region.nodes) nodes.push_back(g.node(n).name);
  for (ValueId v : region.inputs) in.push_back(g.value(v).name);
  for (ValueId v : region.outputs) out.push_back(g.value(v).name);
  json req = {{"op", "export"}, {"nodes", nodes}, {"inputs", in}, {"outputs", out},
              {"example_inputs", impl_->write_values(region, inputs, "export")},
              {"archive", fs::absolute(archive).string()}, {"inputs_file", fs::absolute(inputs_file).string()}};
  if (test) {
    req["test_file"] = fs::absolute(test->path).string();
    req["test"] = {{"graph", test->graph}, {"nodes", test->nodes}, {"summary", test->summary}, {"rule", test->rule}, {"tol", test->tol}};
  }
  if (artifacts) {
    auto [config, globals] = compile_settings_json(artifacts->settings);
    req["artifacts_dir"] = fs::absolute(artifacts->dir).string();
    req["config"] = config;
    req["settings"] = globals;
  }
  json reply = impl_->request(req, "writing the repro " + archive, BackendFailure::Kind::RunFailed);
  if (test) test->status = reply.value("test", std::string("the worker wrote no test (no \"test\" in its export reply)"));
  if (artifacts) {
    for (const json& f : reply.value("artifacts", json::array())) artifacts->files.push_back({f.value("what", ""), f.value("path", "")});
    artifacts->status = reply.value("artifacts_message", std::string(reply.contains("artifacts") ? "" : "the worker wrote no artifacts"));
  }
  return reply.value("nodes", std::vector<std::string>{});
}

std::vector<c10::IValue> WorkerBackend::run(const std::string& region_id, const RegionSpec& region, const std::vector<c10::IValue>& inputs,
                                            double& seconds, KernelMap* observed, ShapeCompile* shapes) {
  const Graph& g = impl_->program.ir.graph;
  const std::string in = impl_->write_values(region, inputs, region_id + "-in");
  const std::string out = (impl_->dir / fmt::format("{}-out-{}.pt", region_id, ++impl_->files)).string();
  const std::string observed_file = (impl_->dir / fmt::format("{}-observed-{}.pt", region_id, impl_->files)).string();
  json req = {{"op", "run"}, {"region", region_id}, {"inputs", in}, {"outputs_file", out}};
  if (observed) req["observed_file"] = observed_file;
  if (impl_->options.seed) req["seed"] = *impl_->options.seed;
  const std::string activity = "running " + region.describe(g);
  json reply = impl_->request(req, activity, BackendFailure::Kind::RunFailed, region_id);
  seconds = reply.value("seconds", 0.0);
  if (shapes && reply.contains("recompiled") && reply["recompiled"].is_object()) {
    // A guard failed at these inputs' sizes: the worker's torch.compile compiled again (docs/dynamic-shapes.md).
    shapes->recompiles += reply["recompiled"].value("compiles", int64_t{1});
    if (reply["recompiled"].contains("guards") && reply["recompiled"]["guards"].is_array()) {
      shapes->guards.clear();
      for (const json& g : reply["recompiled"]["guards"])
        if (g.is_string()) shapes->guards.push_back(g.get<std::string>());
    }
  }
  std::error_code ec;
  fs::remove(in, ec);
  if (!fs::exists(out)) {
    throw BackendFailure(BackendFailure::Kind::RunFailed,
                         fmt::format("the {} answered ok while {} but wrote no outputs file", impl_->label, activity));
  }
  // Read from the file a record at a time: a region's outputs can be most of the run's values.
  uintmax_t size = 0;
  if (file_cut_short(out, size)) {
    fs::remove(out, ec);
    throw BackendFailure(BackendFailure::Kind::RunFailed,
                         fmt::format("the {}'s outputs file is truncated after {}: {} bytes of a torch.save zip without its end "
                                     "record (a write cut short: the worker died or its disk filled up)",
                                     impl_->label, activity, size));
  }
  std::vector<c10::IValue> values;
  try {
    values = values_from_torch_save_file(out);
    fs::remove(out, ec);
  } catch (const Error& e) {
    fs::remove(out, ec);
    throw BackendFailure(BackendFailure::Kind::RunFailed,
                         fmt::format("the {}'s outputs are unreadable after {}: {}", impl_->label, activity, first_line(e.what())));
  }
  // What the worker returned must be what the region defines, before anyone judges it: a value of
  // another dtype or shape would be cast, broadcast or flattened by the comparison, or throw there.
  if (values.size() != region.outputs.size())
    throw BackendFailure(BackendFailure::Kind::RunFailed, fmt::format("the {} returned {} values for {} outputs after {}", impl_->label,
                                                                      values.size(), region.outputs.size(), activity));
  const std::map<std::string, int64_t> bound = bound_symbols(g, region, inputs);
  for (size_t i = 0; i < values.size(); ++i)
    if (std::string why = output_mismatch(g.value(region.outputs[i]), values[i], bound); !why.empty())
      throw BackendFailure(BackendFailure::Kind::RunFailed,
                           fmt::format("the {} returned a wrong value after {}: {}", impl_->label, activity, why));
  if (observed) *observed = read_kernel_map(reply, observed_file, impl_->label);
  return values;
}

}  // namespace pt2diff
