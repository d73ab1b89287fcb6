#include "launcher/remote/ssh_command.hpp"

#include <fmt/format.h>

namespace ddp::launch::remote {
namespace {

std::vector<std::string> common(const SshSettings& s, const std::string& control_path) {
  std::vector<std::string> argv{s.program};
  for (const auto& o : s.options) argv.insert(argv.end(), {"-o", o});
  argv.insert(argv.end(), {"-o", "BatchMode=yes", "-o", "ControlPath=" + control_path});
  if (s.port) argv.insert(argv.end(), {"-p", std::to_string(*s.port)});
  return argv;
}

}  // namespace

std::vector<std::string> ssh_master_argv(const SshSettings& s, const std::string& host,
                                         const std::string& control_path) {
  std::vector<std::string> argv = common(s, control_path);
  argv.insert(argv.end(), {"-o", "ControlMaster=yes", "-o", "ControlPersist=no", "-o",
                           fmt::format("ConnectTimeout={}", static_cast<int>(s.connect_timeout_s + 0.5)), "-o",
                           "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", "-N", "--", host});
  return argv;
}

std::vector<std::string> ssh_session_argv(const SshSettings& s, const std::string& host,
                                          const std::string& control_path, const std::string& remote_command) {
  std::vector<std::string> argv = common(s, control_path);
  argv.insert(argv.end(), {"-o", "ControlMaster=no", "-T", "--", host, remote_command});
  return argv;
}

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace ddp::launch::remote
