// engine/backends/external_backend.cpp — "external:COMMAND": any program speaking the worker protocol
// (another torch version's Inductor, another compiler), started with /bin/sh -c COMMAND (a plain
// `PYTHON SCRIPT.py ...` may come from a worker server instead: worker_server.h).
#include "engine/backends/backends.h"

#include <string_view>
#include <unistd.h>
#include <utility>

#include "engine/worker/worker_backend.h"
#include "engine/worker/worker_server.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace {

/// COMMAND's words when it is only words a shell would pass on as they are (no quotes, expansions, redirections,
/// variable assignments or operators); empty otherwise.
std::vector<std::string> plain_words(const std::string& command) {
  std::vector<std::string> words;
  std::string word;
  for (char c : command) {
    if (c == ' ' || c == '\t') {
      if (!word.empty()) words.push_back(std::exchange(word, {}));
    } else if (std::string_view("\"'\\$`;&|<>(){}*?[]~#=!\n").find(c) != std::string_view::npos) {
      return {};
    } else {
      word += c;
    }
  }
  if (!word.empty()) words.push_back(word);
  return words;
}

}  // namespace

std::unique_ptr<Backend> make_external_backend(const std::string& command, const Program& program, const BackendOptions& options) {
  if (command.empty()) throw Error(Error::Kind::Usage, "--compiled external:COMMAND needs a command");
  // With PT2DIFF_WORKER_SERVER=1, `external:/PATH/TO/PYTHON SCRIPT.py ARGS...` (a wrapper of the shipped worker: the
  // tests' planted compilers) runs as the shell would run it, but can be forked by a worker server like the shipped
  // worker (worker_server.h). Any other command, and every command without the setting, is the shell's.
  std::vector<std::string> words = worker_server_enabled() ? plain_words(command) : std::vector<std::string>{};
  if (runs_python_script(words) && access(words[0].c_str(), X_OK) == 0)
    return std::make_unique<WorkerBackend>(program, std::move(words), "external worker", "external: " + command, options,
                                           stock_worker_launcher());
  return std::make_unique<WorkerBackend>(program, std::vector<std::string>{"/bin/sh", "-c", command}, "external worker",
                                         "external: " + command, options);
}

}  // namespace pt2diff
