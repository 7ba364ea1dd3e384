// engine/load/program.cpp — load_program(): archive → IR → weights, constants and sample inputs.
#include "pt2diff/program.h"

#include <ATen/ops/empty.h>
#include <c10/core/ScalarType.h>
#include <caffe2/serialize/inline_container.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <set>

#include "engine/load/archive.h"
#include "graphs/strided_layout.h"
#include "engine/load/export_json.h"
#include "engine/load/torch_save.h"
#include "engine/load/archive_error.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace {


std::string choose_model(const Archive& archive, const std::string& wanted) {
  auto names = archive.model_names();
  if (!wanted.empty()) {
    if (std::find(names.begin(), names.end(), wanted) == names.end())
      bad_archive(archive.path(), fmt::format("no model '{}' (models: {})", wanted, fmt::join(names, ", ")));
    return wanted;
  }
  if (names.size() == 1) return names.front();
  if (std::find(names.begin(), names.end(), "model") != names.end()) return "model";
  bad_archive(archive.path(), fmt::format("holds several models ({}): choose one with --model", fmt::join(names, ", ")));
}

/// A raw weight's layout as its tensor_meta gives it, checked before libtorch sees it.
StridedLayout weight_layout(const TensorMeta& m, const std::string& where) {
  StridedLayout l;
  l.storage_offset = m.storage_offset.value.value_or(0);
  l.element_size = element_size(m.dtype);
  auto add = [&](const std::vector<SymInt>& from, std::vector<int64_t>& to) {
    for (const SymInt& s : from) {
      if (!s.is_static()) bad_archive(where, "a saved weight with a dynamic size or stride");
      to.push_back(*s.value);
    }
  };
  add(m.sizes, l.sizes);
  add(m.strides, l.strides);
  return l;
}

/// Loads one payload directory (weights or constants), sharing a storage between entries that
/// name the same record, as torch.export.save wrote them.
void load_payload(const Archive& archive, const std::string& dir, const std::string& config_record, Program& program) {
  if (!archive.has_record(config_record)) return;
  const std::string where = archive.path() + ": " + config_record;
  std::map<std::string, c10::Storage> storages;
  for (const PayloadEntry& e : parse_payload_config(archive.read_text(config_record), where)) {
    const std::string record = dir + e.path_name;
    if (e.path_name.rfind("custom_obj", 0) == 0) {
      program.custom_objects.push_back(e.fqn);
      continue;
    }
    if (!archive.has_record(record))
      bad_archive(archive.path(), fmt::format("missing record '{}' for '{}': the archive is incomplete; re-save it", record, e.fqn));
    const std::string at = fmt::format("{}: record '{}' ('{}')", archive.path(), record, e.fqn);
    if (e.use_pickle) {
      program.state[e.fqn] = tensor_from_torch_save(archive.read_text(record), at);
      continue;
    }
    if (!e.meta) bad_archive(at, "no tensor_meta for a raw weight");
    const TensorMeta& m = *e.meta;
    if (m.layout != Layout::Strided) bad_archive(at, fmt::format("a {} tensor: pt2diff reads strided tensors only", layout_name(m.layout)));
    auto it = storages.find(e.path_name);
    if (it == storages.end()) {
      auto [data, size] = archive.read_record(record);
      c10::Storage storage(c10::Storage::use_byte_size_t(), static_cast<int64_t>(size), std::move(data), nullptr, false);
      it = storages.emplace(e.path_name, std::move(storage)).first;
    }
    const StridedLayout layout = weight_layout(m, at);
    const LayoutCheck check = check_layout(layout);
    if (check.problem)
      bad_archive(at, fmt::format("its tensor_meta ({} {}) has {}: the archive is corrupt", dtype_name(m.dtype), m.shape_str(), *check.problem));
    if (check.needed_bytes > static_cast<int64_t>(it->second.nbytes()))
      bad_archive(at, fmt::format("has {} bytes but its tensor_meta ({} {}) needs {}: the archive is truncated or corrupt",
                          it->second.nbytes(), dtype_name(m.dtype), m.shape_str(), check.needed_bytes));
    at::Tensor t = at::empty({0}, at::TensorOptions().dtype(static_cast<c10::ScalarType>(m.dtype)));
    t.set_(it->second, layout.storage_offset, layout.sizes, layout.strides);
    // As the archive's nn.Parameters are in PyTorch: ATen picks kernels by it (matmul folds a 3-D
    // input times a weight into one mm only when the weight needs no grad or the input is
    // contiguous), so eager's numbers depend on it. Runs are in inference mode: nothing is recorded.
    if (m.requires_grad && t.is_floating_point()) t.set_requires_grad(true);
    program.state[e.fqn] = t;
  }
}

/// Every parameter, buffer and constant the signature names must be in the state, with the dtype
/// and shape the graph expects.
void check_state(const Program& p) {
  for (const InputSpec& spec : p.ir.input_specs) {
    bool tensor_state = spec.kind == InputSpec::Kind::Parameter || spec.kind == InputSpec::Kind::Buffer ||
                        spec.kind == InputSpec::Kind::TensorConstant;
    if (!tensor_state) continue;
    auto it = p.state.find(spec.target);
    if (it == p.state.end())
      bad_archive(p.path, fmt::format("{} '{}' is in the signature but not in the archive's weights or constants",
                              input_kind_name(spec.kind), spec.target));
    const Value& v = p.ir.graph.value(spec.arg.as<ValueId>());
    if (!v.meta) continue;
    const at::Tensor& t = it->second;
    bool same_shape = t.dim() == static_cast<int64_t>(v.meta->sizes.size());
    for (size_t d = 0; same_shape && d < v.meta->sizes.size(); ++d)
      same_shape = !v.meta->sizes[d].is_static() || *v.meta->sizes[d].value == t.size(static_cast<int64_t>(d));
    // A saved weight larger than the graph's placeholder says (a stride-0 [2^20, 2^20] for a [64, 32])
    // would be copied to float64 at its own size: refused here, by shape.
    if (static_cast<int8_t>(t.scalar_type()) != static_cast<int8_t>(v.meta->dtype) || !same_shape)
      bad_archive(p.path, fmt::format("{} '{}' is saved as {} {}, the graph expects {} {}", input_kind_name(spec.kind), spec.target,
                              dtype_name(static_cast<DType>(t.scalar_type())), fmt::format("[{}]", fmt::join(t.sizes(), ", ")), dtype_name(v.meta->dtype),
                              v.meta->shape_str()));
  }
}

/// The first device other than cpu and meta that a tensor of the graph is on: where it was exported.
Device export_device(const Graph& g) {
  for (const Value& v : g.values())
    if (v.meta && v.meta->device.type != "cpu" && v.meta->device.type != "meta") return v.meta->device;
  return Device{};
}

}  // namespace

int64_t Program::weight_bytes() const {
  std::set<const void*> seen;
  int64_t total = 0;
  for (const auto& [name, t] : state) {
    const void* key = t.storage().unsafeGetStorageImpl();
    if (seen.insert(key).second) total += static_cast<int64_t>(t.storage().nbytes());
  }
  return total;
}

namespace {

Program load_from(const Archive& archive, const LoadOptions& options) {
  const std::string& path = archive.path();
  Program p;
  p.path = path;
  p.device_weights = std::make_shared<Program::DeviceWeights>();
  p.model_name = choose_model(archive, options.model_name);
  if (archive.has_record("byteorder") && archive.read_text("byteorder") != "little")
    bad_archive(path, "saved on a big-endian machine: pt2diff reads little-endian archives only");
  const std::string model_record = "models/" + p.model_name + ".json";
  p.ir = parse_exported_program(archive.read_text(model_record), path + ": " + model_record);
  load_payload(archive, "data/weights/", "data/weights/" + p.model_name + "_weights_config.json", p);
  load_payload(archive, "data/constants/", "data/constants/" + p.model_name + "_constants_config.json", p);
  check_state(p);
  p.export_device = export_device(p.ir.graph);
  const std::string sample = "data/sample_inputs/" + p.model_name + ".pt";
  if (archive.has_record(sample)) {
    try {
      p.sample_inputs = user_inputs_from_torch_save(archive.read_text(sample), "sample inputs");
    } catch (const Error& e) {
      // Unreadable sample inputs (e.g. namedtuples, a damaged storage record) do not make the program
      // unusable: the user can still pass INPUTS. inspect reports them as absent; running without
      // INPUTS says why.
      p.sample_inputs_problem = e.what();
    }
  }
  return p;
}

}  // namespace

Program load_program(const std::string& path, const LoadOptions& options) { return load_from(Archive(path), options); }

Program load_program_from_memory(std::string bytes, const std::string& name, const LoadOptions& options) {
  auto held = std::make_shared<const std::string>(std::move(bytes));
  Program p = load_from(Archive(held, name), options);
  p.archive_bytes = std::move(held);
  return p;
}

}  // namespace pt2diff
