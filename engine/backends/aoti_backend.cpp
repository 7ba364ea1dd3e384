// engine/backends/aoti_backend.cpp — "aoti:PACKAGE.pt2": a user's AOTInductor package, run in-process
// and compared at the graph outputs (a package is one compiled program: it has no regions). The only
// file that includes the AOTI loader.
#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <set>
#include <sstream>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>

#include "engine/backends/backends.h"
#include "graphs/archive.h"
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

class PackageRegion final : public CompiledRegion {
 public:
  PackageRegion(torch::inductor::AOTIModelPackageLoader& loader, const Program& program, RegionSpec region)
      : loader_(loader), program_(program), region_(std::move(region)) {}

  std::vector<c10::IValue> run(const std::vector<c10::IValue>& inputs) override {
    const Graph& g = program_.ir.graph;
    // The package holds its weights: it takes the user inputs only, in signature order.
    std::vector<at::Tensor> user;
    for (const InputSpec& spec : program_.ir.input_specs) {
      if (spec.kind != InputSpec::Kind::UserInput) continue;
      for (ValueId v : spec.arg.values()) {
        auto it = std::find(region_.inputs.begin(), region_.inputs.end(), v);
        const c10::IValue& value = inputs.at(static_cast<size_t>(it - region_.inputs.begin()));
        if (!value.isTensor())
          throw BackendFailure(BackendFailure::Kind::Unusable,
                               fmt::format("input '{}' is a {}: AOTInductor packages take tensors only", g.value(v).name, value.tagKind()));
        user.push_back(value.toTensor());
      }
    }
    const auto start = std::chrono::steady_clock::now();
    std::vector<at::Tensor> out;
    try {
      out = loader_.run(user);
    } catch (const std::exception& e) {
      throw BackendFailure(BackendFailure::Kind::RunFailed, fmt::format("the AOTInductor package failed: {}", first_line(e.what())));
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
    for (size_t i = 0; i < region_.outputs.size(); ++i)
      for (size_t k = 0; k < user_outputs.size(); ++k)
        if (user_outputs[k] == region_.outputs[i]) result[i] = out[k];
    return result;
  }

 private:
  torch::inductor::AOTIModelPackageLoader& loader_;
  const Program& program_;
  RegionSpec region_;
};

class AotiBackend final : public Backend {
 public:
  AotiBackend(std::string package, const Program& program, const BackendOptions& options)
      : package_(std::move(package)), program_(program), options_(options) {
    if (!std::filesystem::exists(package_))
      throw Error(Error::Kind::Usage, fmt::format("--compiled aoti:{}: no such file", package_));
  }
  std::string name() const override { return "aoti: " + package_; }
  bool compiles_regions() const override { return false; }

  std::unique_ptr<CompiledRegion> compile(const RegionSpec& region, const std::vector<c10::IValue>&) override {
    if (region.exploded || region.nodes.size() != program_.ir.graph.nodes().size())
      throw BackendFailure(BackendFailure::Kind::Unusable, "an AOTInductor package runs the whole graph only");
    const auto start = std::chrono::steady_clock::now();
    if (!loader_) {
      std::unordered_map<std::string, std::string> meta;
      try {
        meta = torch::inductor::AOTIModelPackageLoader::load_metadata_from_package(package_, "model");
      } catch (const std::exception& e) {
        throw BackendFailure(BackendFailure::Kind::Unusable,
                             fmt::format("{} is not an AOTInductor package ({}): make one with "
                                         "torch._inductor.aoti_compile_and_package", package_, first_line(e.what())));
      }
      const std::string device = meta.count("AOTI_DEVICE_KEY") ? meta["AOTI_DEVICE_KEY"] : "cpu";
      if (device != "cpu")
        throw BackendFailure(BackendFailure::Kind::Unusable,
                             fmt::format("{} was compiled for {} and this pt2diff runs packages on CPU only", package_, device));
      if (std::string why = isa_problem(meta.count("AOTI_CPU_ISA") ? meta["AOTI_CPU_ISA"] : ""); !why.empty())
        throw BackendFailure(BackendFailure::Kind::Unusable, fmt::format("{} cannot run here: {}", package_, why));
      try {
        loader_ = std::make_unique<torch::inductor::AOTIModelPackageLoader>(package_, "model");
      } catch (const std::exception& e) {
        throw BackendFailure(BackendFailure::Kind::Unusable, fmt::format("cannot load {}: {}", package_, first_line(e.what())));
      }
    }
    last_compile_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return std::make_unique<PackageRegion>(*loader_, program_, region);
  }

 private:
  std::string package_;
  const Program& program_;
  BackendOptions options_;
  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader_;
};

}  // namespace

std::unique_ptr<Backend> make_aoti_backend(const std::string& package, const Program& program, const BackendOptions& options) {
  if (package.empty()) throw Error(Error::Kind::Usage, "--compiled aoti:PACKAGE.pt2 needs a package path");
  return std::make_unique<AotiBackend>(package, program, options);
}

}  // namespace pt2diff
