// engine/backends/aoti_backend.cpp — "aoti:PACKAGE.pt2": a user's AOTInductor package, run in-process on
// the device it was built for (cpu or cuda) and compared at the graph outputs (a package is one compiled
// program: it has no regions). Its device type and CPU ISA are checked when the backend is made, its
// input guards before every run (aoti_guards.h). When its outputs disagree, its twin (TwinBackend: the
// archive compiled by AOTInductor in the worker, instrumented) gives the kernel table and compiles the
// regions localization asks for. The only file that includes the AOTI loader.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <unistd.h>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <set>
#include <sstream>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>

#include <ATen/Context.h>

#include "engine/backends/aoti_guards.h"
#include "engine/load/torch_compat.h"
#include "engine/backends/backends.h"
#include "engine/load/archive.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace {

/// The CPU flags of this machine as /proc/cpuinfo spells them ("avx2", "avx512f", "amx_tile").
std::set<std::string> cpu_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::set<std::string> flags;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("flags", 0) == 0) {
      std::istringstream words(line.substr(line.find(':') + 1));
      for (std::string w; words >> w;) flags.insert(w);
      break;
    }
  return flags;
}

/// Why a package built for `isa` (AOTI_CPU_ISA: "AVX2", "AVX512 AVX512_VNNI", ...) cannot run here, or "".
std::string isa_problem(const std::string& isa) {
  const std::set<std::string> flags = cpu_flags();
  if (flags.empty()) return "";  // not Linux/x86: nothing to check against
  std::istringstream words(isa);
  std::vector<std::string> missing;
  for (std::string w; words >> w;) {
    std::string flag;
    for (char c : w) flag += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (flag == "avx512") flag = "avx512f";
    if (flag == "neon" || flag == "asimd" || flag == "invalid_vec_isa" || flag.empty()) continue;
    if (!flags.count(flag)) missing.push_back(flag);
  }
  if (missing.empty()) return "";
  return fmt::format("it was compiled for {} and this CPU lacks {}: rebuild the package on this machine", isa,
                     fmt::join(missing, ", "));
}

/// Runs `body` with the process's stderr going to a file, then writes what it caught back to stderr and
/// returns it: AOTInductor's runtime prints a package's own error (its input guards' "input_handles[0]:
/// unmatched dim value ...") there and throws only "run_func_(...) API call failed".
template <typename F>
std::string with_stderr_caught(F&& body) {
  std::fflush(stderr);
  std::FILE* sink = std::tmpfile();
  const int saved = sink ? ::dup(STDERR_FILENO) : -1;
  if (saved < 0) {
    if (sink) std::fclose(sink);
    body();
    return "";
  }
  ::dup2(::fileno(sink), STDERR_FILENO);
  auto restore = [&] {
    std::fflush(stderr);
    ::dup2(saved, STDERR_FILENO);
    ::close(saved);
    std::string caught;
    std::rewind(sink);
    for (int c; (c = std::fgetc(sink)) != EOF;) caught += static_cast<char>(c);
    std::fclose(sink);
    std::fputs(caught.c_str(), stderr);
    return caught;
  };
  try {
    body();
  } catch (...) {
    restore();
    throw;
  }
  return restore();
}

class PackageRegion final : public CompiledRegion {
 public:
  PackageRegion(torch::inductor::AOTIModelPackageLoader& loader, const Program& program, RegionSpec region, std::string package,
                std::string device_type, at::Device device)
      : loader_(loader), program_(program), region_(std::move(region)), package_(std::move(package)), device_type_(std::move(device_type)),
        device_(device) {}

  std::vector<c10::IValue> run(const std::vector<c10::IValue>& inputs) override {
    const Graph& g = program_.ir.graph;
    // The package holds its weights: it takes the user inputs only, in signature order.
    std::vector<at::Tensor> user;
    for (ValueId v : package_input_values(program_)) {
      auto it = std::find(region_.inputs.begin(), region_.inputs.end(), v);
      const c10::IValue& value = inputs.at(static_cast<size_t>(it - region_.inputs.begin()));
      if (!value.isTensor())
        throw BackendFailure(BackendFailure::Kind::Unusable,
                             fmt::format("input '{}' is a {}: AOTInductor packages take tensors only", g.value(v).name, value.tagKind()));
      // The run's inputs are read onto the host; the package runs where the run does (its device type was
      // checked against the run's when the backend was made). Layout is kept: the guards judge strides.
      // A copy: the package writes the inputs the graph writes in place, and these are the run's.
      user.push_back(value.toTensor().to(device_, /*non_blocking=*/false, /*copy=*/true));
    }
    // AOTI's own checklist, done before the package runs: every violation, each naming its input.
    if (const auto broken = package_guard_violations(program_, user, device_type_); broken.size() == 1)
      throw BackendFailure(BackendFailure::Kind::Unusable, fmt::format("the inputs break {}'s compile-time guards: {}", package_, broken[0]));
    else if (!broken.empty())  // one line each, where AOTI_RUNTIME_CHECK_INPUTS=1 stops at the first
      throw BackendFailure(BackendFailure::Kind::Unusable, fmt::format("the inputs break {}'s compile-time guards ({} violations):\n    {}",
                                                                       package_, broken.size(), fmt::join(broken, "\n    ")));
    const auto start = std::chrono::steady_clock::now();
    std::vector<at::Tensor> out;
    std::string failure;
    const std::string printed = with_stderr_caught([&] {
      try {
        out = loader_.run(user);
      } catch (const std::exception& e) {
        failure = first_line(e.what());
      }
    });
    if (!failure.empty()) {
      // The package's guards (AOTI_RUNTIME_CHECK_INPUTS, set by pt2diff) refuse inputs the archive accepts
      // when the package was built from another export of the model: name the input.
      static const std::regex guard(R"((input_handles\[\d+\]:[^\n]*))");
      std::smatch m;
      if (std::regex_search(printed, m, guard))
        throw BackendFailure(BackendFailure::Kind::Unusable,
                             fmt::format("the package's own input check refused the inputs: {} (was it built from this "
                                         "program? rebuild it from this archive)", name_package_guard_failure(m[1].str(), program_)));
      throw BackendFailure(BackendFailure::Kind::RunFailed, fmt::format("the AOTInductor package failed: {}", failure));
    }
    last_run_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // It returns the user outputs; buffer mutations and the like stay inside it (None: not compared).
    std::vector<ValueId> user_outputs;
    for (const OutputSpec& spec : program_.ir.output_specs)
      if (spec.kind == OutputSpec::Kind::UserOutput)
        for (ValueId v : spec.arg.values()) user_outputs.push_back(v);
    if (out.size() != user_outputs.size())
      throw BackendFailure(BackendFailure::Kind::Unusable,
                           fmt::format("the package returns {} outputs and the graph has {} user outputs: was it built from "
                                       "this program?", out.size(), user_outputs.size()));
    std::vector<c10::IValue> result(region_.outputs.size());
    const std::vector<ValueId> given = package_input_values(program_);
    for (size_t i = 0; i < region_.outputs.size(); ++i) {
      for (size_t k = 0; k < user_outputs.size(); ++k)
        if (user_outputs[k] == region_.outputs[i]) result[i] = out[k];
      // A user input the graph writes in place: the package wrote it into the tensor it was given.
      for (size_t k = 0; k < given.size() && result[i].isNone(); ++k)
        if (given[k] == region_.outputs[i]) result[i] = user[k];
    }
    return result;
  }

  KernelMap kernel_map() const override {
    return {"an AOTInductor package's code cannot be observed (no hooks run inside it); the archive is compiled "
            "instrumented when the package's outputs disagree", {}, {}};
  }

 private:
  torch::inductor::AOTIModelPackageLoader& loader_;
  const Program& program_;
  RegionSpec region_;
  std::string package_, device_type_;
  at::Device device_;
};

class AotiBackend final : public Backend, public TwinBackend {
 public:
  /// Reads the package's metadata and checks it can run here before anything runs: an AOTI package is
  /// built for one device type (and, on the CPU, one vector ISA), and AOTI's guide has its users check
  /// that first.
  AotiBackend(std::string package, const Program& program, const BackendOptions& options)
      : package_(std::move(package)), program_(program), options_(options) {
    if (!std::filesystem::exists(package_))
      throw Error(Error::Kind::Usage, fmt::format("--compiled aoti:{}: no such file", package_));
    std::unordered_map<std::string, std::string> meta;
    try {
      meta = torch::inductor::AOTIModelPackageLoader::load_metadata_from_package(package_, "model");
    } catch (const std::exception& e) {
      throw Error(Error::Kind::Usage, fmt::format("{} is not an AOTInductor package ({}): make one with "
                                                  "torch._inductor.aoti_compile_and_package", package_, first_line(e.what())));
    }
    device_type_ = meta.count("AOTI_DEVICE_KEY") ? meta["AOTI_DEVICE_KEY"] : "cpu";
    const at::Device run_device(options_.device);
    const std::string run_type = c10::DeviceTypeName(run_device.type(), /*lower_case=*/true);
    if (device_type_ != run_type)
      throw Error(Error::Kind::Usage,
                  fmt::format("{} was compiled for {} and this run is on {}: {}", package_, device_type_, options_.device,
                              device_type_ == "cuda" ? "run with --device cuda on a machine with a GPU, or rebuild the package from a "
                                                       "program exported on the CPU"
                                                     : "run with --device cpu, or rebuild the package from a program exported on "
                                                       "the GPU (aoti_compile_and_package on a cuda export)"));
    if (device_type_ == "cuda" && !at::hasCUDA())
      throw Error(Error::Kind::Usage, fmt::format("{} was compiled for cuda and this pt2diff's libtorch has no CUDA (or no GPU is "
                                                  "visible): build pt2diff against a CUDA torch wheel on a GPU machine", package_));
    if (device_type_ == "cpu")
      if (std::string why = isa_problem(meta.count("AOTI_CPU_ISA") ? meta["AOTI_CPU_ISA"] : ""); !why.empty())
        throw Error(Error::Kind::Usage, fmt::format("{} cannot run here: {}", package_, why));
    device_index_ = run_device.has_index() ? run_device.index() : -1;
    // The package's own guards too (AOTI_RUNTIME_CHECK_INPUTS, read once per package at its first run):
    // they catch inputs the archive accepts when the package was built from another export. A user's
    // own setting (0 included) is kept.
    ::setenv("AOTI_RUNTIME_CHECK_INPUTS", "1", /*overwrite=*/0);
  }
  std::string name() const override { return "aoti: " + package_; }
  /// The package runs the whole graph only; once its twin is engaged, the twin compiles every region.
  bool compiles_regions() const override { return routed_; }
  /// The package's code cannot be observed; its twin's can (stage observe_twin asks it).
  bool observes() const override { return true; }

  Backend& engage_twin() override {
    if (!twin_) twin_ = make_aoti_compiler_backend(program_, options_);
    return *twin_;
  }
  void route_regions_to_twin() override { routed_ = twin_ != nullptr; }
  std::string twin_description() const override {
    return fmt::format("an instrumented AOTInductor compile of the archive by this torch ({})", PT2DIFF_LINKED_TORCH_VERSION);
  }
  double startup_seconds() const override { return twin_ ? twin_->startup_seconds() : 0; }

  std::unique_ptr<CompiledRegion> compile(const RegionSpec& region, const std::vector<c10::IValue>& example_inputs) override {
    if (routed_) {
      auto compiled = twin_->compile(region, example_inputs);
      last_compile_seconds_ = twin_->last_compile_seconds();
      return compiled;
    }
    if (region.exploded || region.nodes.size() != program_.ir.graph.nodes().size())
      throw BackendFailure(BackendFailure::Kind::Unusable, "an AOTInductor package runs the whole graph only");
    const auto start = std::chrono::steady_clock::now();
    if (!loader_) {
      try {
        loader_ = std::make_unique<torch::inductor::AOTIModelPackageLoader>(package_, "model", false, 1, device_index_);
      } catch (const std::exception& e) {
        throw BackendFailure(BackendFailure::Kind::Unusable, fmt::format("cannot load {}: {}", package_, first_line(e.what())));
      }
    }
    last_compile_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return std::make_unique<PackageRegion>(*loader_, program_, region, package_, device_type_, at::Device(options_.device));
  }

 private:
  std::string package_;
  const Program& program_;
  BackendOptions options_;
  std::string device_type_;
  c10::DeviceIndex device_index_ = -1;
  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader_;
  std::unique_ptr<Backend> twin_;
  bool routed_ = false;  ///< the twin compiles every region (route_regions_to_twin)
};

}  // namespace

std::unique_ptr<Backend> make_aoti_backend(const std::string& package, const Program& program, const BackendOptions& options) {
  if (package.empty()) throw Error(Error::Kind::Usage, "--compiled aoti:PACKAGE.pt2 needs a package path");
  return std::make_unique<AotiBackend>(package, program, options);
}

}  // namespace pt2diff
