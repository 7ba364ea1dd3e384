// engine/backends/external_backend.cpp — "external:COMMAND": any program speaking the worker protocol
// (another torch version's Inductor, another compiler), started with /bin/sh -c COMMAND.
#include "engine/backends/backends.h"
#include "engine/backends/worker_backend.h"
#include "pt2diff/error.h"

namespace pt2diff {

std::unique_ptr<Backend> make_external_backend(const std::string& command, const Program& program, const BackendOptions& options) {
  if (command.empty()) throw Error(Error::Kind::Usage, "--compiled external:COMMAND needs a command");
  return std::make_unique<WorkerBackend>(program, std::vector<std::string>{"/bin/sh", "-c", command}, "external worker",
                                         "external: " + command, options);
}

}  // namespace pt2diff
