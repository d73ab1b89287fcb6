// A fresh private (0700) directory, mkdtemp(3): PREFIX followed by six random characters.
// No cleanup: the caller owns and removes it. Never throws.
#pragma once

#include <optional>
#include <string>

namespace ddp::launch::os {

// The directory's path, or nullopt with errno set (ENOENT, EACCES, ...).
std::optional<std::string> make_temp_dir(const std::string& prefix);

}  // namespace ddp::launch::os
