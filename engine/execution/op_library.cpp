// engine/execution/op_library.cpp — custom-op libraries (TORCH_LIBRARY) loaded into this process, as
// torch.ops.load_library does in Python: their ops become dispatcher ops the interpreter can run.
#include <dlfcn.h>
#include <filesystem>
#include <fmt/format.h>

#include "pt2diff/error.h"
#include "pt2diff/advanced/interpreter.h"

namespace pt2diff {

void load_op_library(const std::string& path) {
  if (!std::filesystem::exists(path))
    throw Error(Error::Kind::Usage, fmt::format("--load-library {}: no such file", path));
  // RTLD_GLOBAL: the library's registrations reference libtorch's symbols, and later libraries may
  // reference its own.
  if (!dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
    const char* why = dlerror();
    throw Error(Error::Kind::Usage, fmt::format("--load-library {}: cannot load it ({}); it must be built against this libtorch",
                                                path, why ? why : "unknown error"));
  }
}

}  // namespace pt2diff
