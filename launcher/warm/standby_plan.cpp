#include "launcher/warm/standby_plan.hpp"

#include <filesystem>

#include <fmt/format.h>

namespace ddp::launch::warm {

bool is_python_executable(const std::string& executable) {
  return std::filesystem::path(executable).filename().string().rfind("python", 0) == 0;
}

std::optional<std::vector<std::string>> python_flags(const std::vector<std::string>& argv) {
  std::vector<std::string> flags;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "-m") return flags;
    if (a == "-c" || a == "-") return std::nullopt;
    if (a == "-W" || a == "-X" || a == "--check-hash-based-pycs") {
      if (i + 1 >= argv.size()) return std::nullopt;
      flags.push_back(a);
      flags.push_back(argv[++i]);
      continue;
    }
    if (a.size() > 1 && a[0] == '-') {
      flags.push_back(a);
      continue;
    }
    return flags;  // the script
  }
  return std::nullopt;  // an interactive interpreter
}

StandbyPlan plan_standbys(const StandbyRequest& r) {
  StandbyPlan plan;
  plan.preload = r.preload;
  if (!r.warm_restarts || r.max_restarts <= 0) return plan;
  if (is_python_executable(r.executable)) {
    if (python_flags(r.argv)) {
      plan.kind = StandbyKind::kPython;
      return plan;
    }
    plan.cold_reason = fmt::format(
        "warm restarts need a Python script (or -m module) to hand over; '{}' runs none: restarts are cold", r.program);
    return plan;
  }
  if (r.has_hook_marker) {
    plan.kind = StandbyKind::kNative;
    return plan;
  }
  plan.cold_reason = fmt::format(
      "warm restarts need a Python script or a program linked with libddp; {} is neither: restarts are cold "
      "(--no-warm-restarts silences this)",
      r.program);
  return plan;
}

std::vector<std::string> standby_argv(const StandbyPlan& plan, const std::vector<std::string>& slot_argv,
                                      const std::string& bootstrap) {
  if (plan.kind != StandbyKind::kPython) return slot_argv;
  std::vector<std::string> argv{slot_argv.at(0)};
  for (auto& f : python_flags(slot_argv).value_or(std::vector<std::string>{})) argv.push_back(f);
  argv.push_back("-c");
  argv.push_back(bootstrap);
  return argv;
}

bool adoptable(const StandbyPlan& plan, const std::string& executable, const std::vector<std::string>& slot_argv,
               const os::SpawnSpec& spawn, bool prepared) {
  if (plan.kind == StandbyKind::kNone || executable != spawn.executable) return false;
  if (plan.kind == StandbyKind::kNative || prepared) return slot_argv == spawn.argv;
  const auto theirs = python_flags(spawn.argv);
  return theirs && !slot_argv.empty() && !spawn.argv.empty() && slot_argv[0] == spawn.argv[0] &&
         *theirs == python_flags(slot_argv);
}

bool StandbyRetries::exited(bool was_ready) {
  if (was_ready) {
    early_deaths_ = 0;
    return false;
  }
  if (given_up_ || ++early_deaths_ < kMaxEarlyDeaths) return false;
  given_up_ = true;
  return true;
}

}  // namespace ddp::launch::warm
