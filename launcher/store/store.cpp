// The parts of store.hpp shared by every Store implementation: how errors name keys.
#include "launcher/store/store.hpp"

#include <fmt/format.h>

namespace ddp::launch::store {

std::string describe_missing(const std::vector<std::string>& missing, size_t asked) {
  constexpr size_t kShown = 8;
  std::string list;
  for (size_t i = 0; i < missing.size() && i < kShown; ++i) list += fmt::format("{}'{}'", i ? ", " : "", missing[i]);
  if (missing.size() > kShown) list += ", ...";
  if (asked <= 1) return fmt::format("key {}", list);
  return fmt::format("keys {} ({} of {} missing)", list, missing.size(), asked);
}

}  // namespace ddp::launch::store
