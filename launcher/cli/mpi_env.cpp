// mpirun / PMI task variables; see mpi_env.hpp.
#include "launcher/cli/mpi_env.hpp"

#include <fmt/format.h>

#include "launcher/base/text.hpp"
#include "launcher/cli/usage_error.hpp"

namespace ddp::launch::cli {
namespace {

struct Convention {
  const char* rank;
  const char* size;
  const char* local_size;  // tasks on this node; nullptr: not told
  const char* name;
};

constexpr Convention kConventions[] = {
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "Open MPI"},
    {"PMIX_RANK", "PMIX_SIZE", nullptr, "PMIx"},
    {"PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS", "PMI"},
};

int number(const Environment& env, const char* key) {
  const std::string value = lookup(env, key).value_or("");
  auto n = parse_natural(trim(value));
  if (!n || *n > 1000000)
    usage_error(
        fmt::format("{}='{}' is not a task number; ddp-launch reads it as this node's place under an "
                    "MPI launcher (unset it, or give --nnodes and --node-rank)",
                    key, value));
  return static_cast<int>(*n);
}

}  // namespace

std::optional<MpiTask> mpi_task(const Environment& env) {
  for (const auto& c : kConventions) {
    if (!lookup(env, c.rank) || !lookup(env, c.size)) continue;
    MpiTask task;
    task.rank = number(env, c.rank);
    task.size = number(env, c.size);
    if (task.size < 1 || task.rank >= task.size)
      usage_error(
          fmt::format("{}={} and {}={}: the rank must be below the size", c.rank, task.rank, c.size, task.size));
    if (c.local_size && lookup(env, c.local_size)) task.tasks_on_this_node = number(env, c.local_size);
    task.source = fmt::format("{} ({}/{})", c.name, c.rank, c.size);
    return task;
  }
  return std::nullopt;
}

}  // namespace ddp::launch::cli
