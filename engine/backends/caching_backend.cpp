// engine/backends/caching_backend.cpp — a backend that compiles each region once: a tolerance sweep
// localizes at several tolerances, and the probes it repeats (same region, same inputs) must not cost
// compiles again. Compiled regions are shared; each run() still runs.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>

#include "engine/backends/backends.h"

namespace pt2diff {

namespace {

class SharedRegion final : public CompiledRegion {
 public:
  explicit SharedRegion(std::shared_ptr<CompiledRegion> region) : region_(std::move(region)) {}
  std::vector<c10::IValue> run(const std::vector<c10::IValue>& inputs) override {
    auto out = region_->run(inputs);
    last_run_seconds_ = region_->last_run_seconds();
    return out;
  }
  KernelMap kernel_map() const override { return region_->kernel_map(); }
  std::optional<ShapeCompile> shapes() const override { return region_->shapes(); }

 private:
  std::shared_ptr<CompiledRegion> region_;
};

class CachingBackend final : public Backend {
 public:
  explicit CachingBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  bool compiles_regions() const override { return inner_->compiles_regions(); }
  bool observes() const override { return inner_->observes(); }
  bool leaves_eager() const override { return inner_->leaves_eager(); }
  std::unique_ptr<CompiledRegion> compile(const RegionSpec& region, const std::vector<c10::IValue>& example_inputs) override {
    const std::string key = fmt::format("{}|{}|{}|{}|{}|{}", fmt::join(region.nodes, ","), fmt::join(region.inputs, ","),
                                        fmt::join(region.outputs, ","), region.exploded, region.observe,
                                        fmt::join(region.eager, ","));
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      it = cache_.emplace(key, std::shared_ptr<CompiledRegion>(inner_->compile(region, example_inputs))).first;
      last_compile_seconds_ = inner_->last_compile_seconds();
      ++compiles_;
    } else {
      last_compile_seconds_ = 0;
    }
    return std::make_unique<SharedRegion>(it->second);
  }
  size_t compiles() const { return compiles_; }

 private:
  std::unique_ptr<Backend> inner_;
  std::map<std::string, std::shared_ptr<CompiledRegion>> cache_;
  size_t compiles_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_caching_backend(std::unique_ptr<Backend> inner, std::function<size_t()>* compiles) {
  auto backend = std::make_unique<CachingBackend>(std::move(inner));
  if (compiles) *compiles = [b = backend.get()] { return b->compiles(); };
  return backend;
}

}  // namespace pt2diff
