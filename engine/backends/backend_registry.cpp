// engine/backends/backend_registry.cpp — backend specs ("inductor", "fault:mm_1:scale") to backends.
#include <fmt/format.h>

#include "engine/backends/backends.h"
#include "pt2diff/backend_spec.h"
#include "pt2diff/error.h"

namespace pt2diff {

BackendSpec BackendSpec::parse(const std::string& spec) {
  const auto colon = spec.find(':');
  const std::string kind = spec.substr(0, colon), rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  BackendSpec s;
  s.argument = rest;
  if (kind == "eager" && rest.empty()) s.kind = Kind::Eager;
  else if (kind == "inductor" && rest.empty()) s.kind = Kind::Inductor;
  else if (kind == "aoti" && colon != std::string::npos && rest.empty())
    throw Error(Error::Kind::Usage, "--compiled aoti:PACKAGE.pt2 needs a package path (or --compiled aoti: the archive "
                                    "compiled by AOTInductor)");
  else if (kind == "aoti") s.kind = Kind::Aoti;  // no argument: the archive compiled by AOTInductor
  else if (kind == "external") s.kind = Kind::External;
  else if (kind == "fault") s.kind = Kind::Fault;
  else
    throw Error(Error::Kind::Usage, fmt::format("unknown backend '{}' for --compiled (available: inductor, eager, aoti, aoti:PACKAGE.pt2, "
                                                "external:COMMAND, fault:NODE:KIND)", spec));
  return s;
}

std::string BackendSpec::str() const {
  switch (kind) {
    case Kind::Eager: return "eager";
    case Kind::Inductor: return "inductor";
    case Kind::Aoti: return argument.empty() ? "aoti" : "aoti:" + argument;
    case Kind::External: return "external:" + argument;
    case Kind::Fault: return "fault:" + argument;
  }
  return "inductor";
}

std::unique_ptr<Backend> make_backend(const std::string& spec, const Program& program, const BackendOptions& options) {
  const BackendSpec s = BackendSpec::parse(spec);
  switch (s.kind) {
    case BackendSpec::Kind::Eager: return make_eager_backend(program, options);
    case BackendSpec::Kind::Inductor: return make_inductor_backend(program, options);
    case BackendSpec::Kind::Aoti:
      return s.argument.empty() ? make_aoti_compiler_backend(program, options) : make_aoti_backend(s.argument, program, options);
    case BackendSpec::Kind::External: return make_external_backend(s.argument, program, options);
    case BackendSpec::Kind::Fault: return make_fault_backend(s.argument, program, options);
  }
  return make_inductor_backend(program, options);
}

}  // namespace pt2diff
