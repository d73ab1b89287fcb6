#include "launcher/cli/environment.hpp"

#include <utility>

#include "launcher/base/text.hpp"

namespace ddp::launch::cli {

Environment environment_from(char** envp) {
  Environment env;
  for (char** e = envp; e && *e; ++e) {
    if (auto kv = split_once(*e, '=')) env.emplace(std::move(kv->first), std::move(kv->second));
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

std::string temp_root(const Environment& env) {
  std::string tmp = lookup(env, "TMPDIR").value_or("");
  return tmp.empty() ? "/tmp" : tmp;
}

}  // namespace ddp::launch::cli
