// Environment: the launcher's view of environment variables as a sorted map, read once
// in main() and passed down so that option parsing and env computation stay pure.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ddp::launch::cli {

using Environment = std::map<std::string, std::string>;

Environment environment_from(char** envp);                             // "K=V" array -> map
std::vector<std::string> environment_entries(const Environment& env);  // map -> "K=V"
std::optional<std::string> lookup(const Environment& env, const std::string& key);
std::string temp_root(const Environment& env);  // $TMPDIR, or /tmp when unset or empty

}  // namespace ddp::launch::cli
