// engine/backends/backend_registry.cpp — backend specs ("inductor", "fault:mm_1:scale") to backends.
#include <fmt/format.h>

#include "engine/backends/backends.h"
#include "pt2diff/error.h"

namespace pt2diff {

std::unique_ptr<Backend> make_backend(const std::string& spec, const Program& program, const BackendOptions& options) {
  const auto colon = spec.find(':');
  const std::string kind = spec.substr(0, colon), rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (kind == "eager" && rest.empty()) return make_eager_backend(program, options);
  if (kind == "inductor" && rest.empty()) return make_inductor_backend(program, options);
  if (kind == "aoti") return make_aoti_backend(rest, program, options);
  if (kind == "external") return make_external_backend(rest, program, options);
  if (kind == "fault") return make_fault_backend(rest, program, options);
  throw Error(Error::Kind::Usage, fmt::format("unknown backend '{}' for --compiled (available: inductor, eager, aoti:PACKAGE.pt2, "
                                              "external:COMMAND, fault:NODE:KIND)", spec));
}

}  // namespace pt2diff
