// torch.distributed.launch's --local_rank for the scripts written for it: when PROGRAM is a
// Python script (or `python [flags] script.py`) whose source declares --local_rank or
// --local-rank with argparse's add_argument, each worker gets it in that spelling, as the
// old launcher passed it. The scan of the source is pure; read_script_head is the one read
// (at most 1 MiB). The caller decides whether the flags allow it (not with --use-env or
// --local-rank-arg given).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "launcher/worker/worker_command.hpp"

namespace ddp::launch::worker {

// The Python script a worker runs, if any: PROGRAM itself (arg_index -1), or the first
// argument that is no interpreter flag when PROGRAM is a python interpreter (arg_index i:
// spec.args[i]). nullopt for -m MODULE, python -m/-c, and programs that are not Python.
struct ScriptRef {
  std::string path;
  int arg_index = -1;
};
std::optional<ScriptRef> python_script_of(const WorkerCommandSpec& spec);

// "--local_rank" or "--local-rank", whichever the first add_argument(...) call that names
// one of them lists first among its option strings; "" when none does. Commented-out lines
// do not count.
std::string declared_local_rank_flag(std::string_view source);

// The script's first bytes (at most 1 MiB); "" when it cannot be read.
std::string read_script_head(const std::string& path);

// Sets cmd's local-rank argument when the script declares one (for `python script.py`,
// the interpreter's flags and the script move into cmd.prefix, so the argument follows
// the script). Returns the notice to print, or "" when nothing changed.
std::string pass_declared_local_rank(const WorkerCommandSpec& spec, WorkerCommand& cmd);

}  // namespace ddp::launch::worker
