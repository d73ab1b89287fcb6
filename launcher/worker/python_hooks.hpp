// The directory at the end of every worker's PYTHONPATH: it holds python/ddp_exit_drain.py
// (embedded at build time) as sitecustomize.py, so that a Python worker lets torch's threads
// finish before its interpreter ends (docs/store.md, "The job-end abort"), and
// python/ddp_standby.py, so that a script can `import ddp_standby` for its standby point
// (docs/warm-restarts.md) with the launcher's own copy. Created on first
// use under $TMPDIR as ddp-launch-python-<pid>-XXXXXX, once per launcher process (thread-safe),
// and removed when that process exits normally; those of launchers that were killed are
// removed by the next launcher of the same user. Never fatal: when it cannot be written, one
// notice says so and workers run without it.
#pragma once

#include <string>

#include "launcher/cli/environment.hpp"

namespace ddp::launch::worker {

// The directory, or "" when it could not be created.
const std::string& python_hooks_dir(const cli::Environment& env);

// python/ddp_standby.py, embedded at build time: the Python standby's bootstrap and the
// module that holds ddp_standby.point().
const char* standby_bootstrap_source();

}  // namespace ddp::launch::worker
