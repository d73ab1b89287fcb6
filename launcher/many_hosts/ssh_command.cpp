#include "launcher/many_hosts/ssh_command.hpp"

#include <fmt/format.h>

namespace ddp::launch::many_hosts {
namespace {

// What the launch relies on comes first (ssh keeps the first value of an option), then the
// user's options (which win over the softer defaults that follow them).
std::vector<std::string> common(const SshSettings& s, const std::string& control_path, const char* master) {
  std::vector<std::string> argv{s.program,
                                "-o",
                                "BatchMode=yes",
                                "-o",
                                "ControlPath=" + control_path,
                                "-o",
                                std::string("ControlMaster=") + master};
  if (s.port) argv.insert(argv.end(), {"-p", std::to_string(*s.port)});
  for (const auto& o : s.options) argv.insert(argv.end(), {"-o", o});
  return argv;
}

}  // namespace

std::vector<std::string> ssh_master_argv(const SshSettings& s, const std::string& host,
                                         const std::string& control_path) {
  std::vector<std::string> argv = common(s, control_path, "yes");
  argv.insert(argv.end(), {"-o", "ControlPersist=no", "-o",
                           fmt::format("ConnectTimeout={}", static_cast<int>(s.connect_timeout_s + 0.5)), "-o",
                           "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", "-N", "--", host});
  return argv;
}

std::vector<std::string> ssh_session_argv(const SshSettings& s, const std::string& host,
                                          const std::string& control_path, const std::string& remote_command) {
  std::vector<std::string> argv = common(s, control_path, "no");
  argv.insert(argv.end(), {"-T", "--", host, remote_command});
  return argv;
}

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace ddp::launch::many_hosts
