// engine/backends/aoti_guards.cpp — a package's input guards, read from the program it was built from.
#include "engine/backends/aoti_guards.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <regex>

namespace pt2diff {

namespace {

std::string ints(c10::IntArrayRef v) { return fmt::format("[{}]", fmt::join(v.begin(), v.end(), ", ")); }

std::string metas(const std::vector<SymInt>& v) {
  std::vector<std::string> s;
  for (const SymInt& i : v) s.push_back(i.str());
  return fmt::format("[{}]", fmt::join(s, ", "));
}

/// The lines for one input; `name` as the user knows it.
void check_input(const Program& p, const std::string& name, const TensorMeta& m, const at::Tensor& t, const std::string& device_type,
                 std::vector<std::string>& out) {
  if (!t.defined()) {
    out.push_back(fmt::format("input '{}' is None: the package takes a {}{} tensor", name, dtype_name(m.dtype), m.shape_str()));
    return;
  }
  if (static_cast<int8_t>(t.scalar_type()) != static_cast<int8_t>(m.dtype))
    out.push_back(fmt::format("input '{}' is {}, the package was compiled for {}: convert it (x.to(torch.{}))", name,
                              dtype_name(static_cast<DType>(t.scalar_type())), dtype_name(m.dtype), dtype_name(m.dtype)));
  if (t.dim() != static_cast<int64_t>(m.sizes.size())) {
    out.push_back(fmt::format("input '{}' has {} dims {}, the package was compiled for {} dims {}", name, t.dim(), ints(t.sizes()),
                              m.sizes.size(), m.shape_str()));
    return;  // sizes and strides cannot be compared dim by dim
  }
  for (size_t d = 0; d < m.sizes.size(); ++d) {
    const SymInt& s = m.sizes[d];
    const int64_t got = t.size(static_cast<int64_t>(d));
    if (s.is_static()) {
      if (got != *s.value)
        out.push_back(fmt::format("input '{}' dim {} is {}, the package was compiled for {} (a static dim: export with a dynamic "
                                  "dim and rebuild the package to vary it)", name, d, got, *s.value));
      continue;
    }
    auto range = p.ir.range_constraints.find(s.expr);
    if (range == p.ir.range_constraints.end()) continue;
    const RangeConstraint& rc = range->second;
    if ((rc.min && got < *rc.min) || (rc.max && got > *rc.max))
      out.push_back(fmt::format("input '{}' dim {} is {}, outside the range [{}, {}] the package was compiled for (symbol {})", name, d,
                                got, rc.min ? std::to_string(*rc.min) : "-inf", rc.max ? std::to_string(*rc.max) : "inf", s.expr));
  }
  // The compiled code indexes memory with the strides it was compiled for: AOTI checks every static one.
  if (m.strides.size() == m.sizes.size())
    for (size_t d = 0; d < m.strides.size(); ++d)
      if (m.strides[d].is_static() && t.stride(static_cast<int64_t>(d)) != *m.strides[d].value) {
        out.push_back(fmt::format("input '{}' has strides {}, the package was compiled for {} (its code reads memory by those "
                                  "strides): pass it in that layout (x.contiguous() for a contiguous export)",
                                  name, ints(t.strides()), metas(m.strides)));
        break;
      }
  const std::string got_type = c10::DeviceTypeName(t.device().type(), /*lower_case=*/true);
  if (got_type != device_type)
    out.push_back(fmt::format("input '{}' is on {}, the package was compiled for {}: pass it there (x.to('{}'))", name,
                              t.device().str(), device_type, device_type));
}

}  // namespace

std::vector<ValueId> package_input_values(const Program& program) {
  std::vector<ValueId> values;
  for (const InputSpec& spec : program.ir.input_specs)
    if (spec.kind == InputSpec::Kind::UserInput)
      for (ValueId v : spec.arg.values()) values.push_back(v);
  return values;
}

std::vector<std::string> package_guard_violations(const Program& program, const std::vector<at::Tensor>& inputs,
                                                  const std::string& device_type) {
  const Graph& g = program.ir.graph;
  const std::vector<ValueId> values = package_input_values(program);
  std::vector<std::string> out;
  if (inputs.size() != values.size()) {
    out.push_back(fmt::format("{} inputs given, the package takes {}", inputs.size(), values.size()));
    return out;
  }
  for (size_t i = 0; i < values.size(); ++i) {
    const Value& v = g.value(values[i]);
    if (v.meta) check_input(program, v.name, *v.meta, inputs[i], device_type, out);
  }
  return out;
}

std::string name_package_guard_failure(const std::string& message, const Program& program) {
  static const std::regex handle(R"(input_handles\[(\d+)\]: ?)");
  std::smatch m;
  if (!std::regex_search(message, m, handle)) return message;
  const std::vector<ValueId> values = package_input_values(program);
  const size_t i = std::stoul(m[1].str());
  if (i >= values.size()) return message;
  return fmt::format("{}input '{}' ({}): {}", m.prefix().str(), program.ir.graph.value(values[i]).name,
                     m[0].str().substr(0, m[0].str().find(':')), m.suffix().str());
}

}  // namespace pt2diff
