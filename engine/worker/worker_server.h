// engine/worker/worker_server.h — workers forked by a Python that has imported torch and Inductor once
// (python/pt2diff_worker/server.py), instead of a new Python per worker. Opt-in: PT2DIFF_WORKER_SERVER=1.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/worker/worker_process.h"

namespace pt2diff {

/// Whether workers may come from a worker server: PT2DIFF_WORKER_SERVER is "1".
bool worker_server_enabled();
/// Whether `argv` is PYTHON SCRIPT.py ARGS... with PYTHON a path (it has a '/'): the workers a server can fork.
bool runs_python_script(const std::vector<std::string>& argv);

/// The worker `argv` (PYTHON SCRIPT.py ARGS...), forked by the worker server of this Python, directory and
/// environment (`environment` applied as WorkerProcess applies it; TMPDIR may differ between workers of one
/// server, nothing else). The server is started with `launcher` (the stock inductor_worker.py) when none
/// answers, and serves later workers of the same key until it has been idle for a minute. nullptr when no
/// server can serve this worker (argv is not a Python script, the socket directory is not private to this
/// user, the server did not start): the caller then starts the worker itself, as without the server.
std::unique_ptr<WorkerProcess> start_served_worker(const std::vector<std::string>& argv, const std::string& launcher,
                                                   const std::string& stderr_path, int64_t memory_limit,
                                                   const std::vector<std::string>& environment);

}  // namespace pt2diff
