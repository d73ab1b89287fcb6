#include "launcher/cli/environment.hpp"

namespace ddp::launch {

Environment environment_from(char** envp) {
  Environment env;
  for (char** e = envp; e && *e; ++e) {
    std::string entry(*e);
    auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

std::vector<std::string> environment_entries(const Environment& env) {
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::optional<std::string> lookup(const Environment& env, const std::string& key) {
  auto it = env.find(key);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

}  // namespace ddp::launch
