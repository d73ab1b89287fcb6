#include "launcher/os/proc_state.hpp"

#include <sstream>

#include "launcher/os/fd_io.hpp"

namespace ddp::launch::os {
namespace {

// "[<0>] do_wait+0x1a/0x30" -> "do_wait"
std::string frame_name(const std::string& line) {
  size_t from = line.find("] ");
  from = from == std::string::npos ? 0 : from + 2;
  const size_t to = line.find('+', from);
  return line.substr(from, to == std::string::npos ? std::string::npos : to - from);
}

}  // namespace

std::optional<char> parse_proc_state(std::string_view stat_text) {
  const size_t paren = stat_text.rfind(')');
  if (paren == std::string_view::npos) return std::nullopt;
  const size_t at = stat_text.find_first_not_of(' ', paren + 1);
  if (at == std::string_view::npos) return std::nullopt;
  const char state = stat_text[at];
  if (state < 'A' || state > 'z') return std::nullopt;
  return state;
}

std::optional<pid_t> parse_proc_parent(std::string_view stat_text) {
  const size_t paren = stat_text.rfind(')');
  if (paren == std::string_view::npos) return std::nullopt;
  std::istringstream fields{std::string(stat_text.substr(paren + 1))};
  std::string state;
  long long parent = -1;
  if (!(fields >> state >> parent) || parent < 0) return std::nullopt;
  return static_cast<pid_t>(parent);
}

std::optional<pid_t> proc_parent(pid_t pid) {
  return parse_proc_parent(read_text("/proc/" + std::to_string(pid) + "/stat"));
}

std::optional<char> proc_state(pid_t pid) {
  return parse_proc_state(read_text("/proc/" + std::to_string(pid) + "/stat"));
}

std::string kernel_stack(pid_t pid, size_t max_frames) {
  const std::string dir = "/proc/" + std::to_string(pid);
  std::istringstream stack(read_text(dir + "/stack"));
  std::string out, line;
  for (size_t n = 0; n < max_frames && std::getline(stack, line);)
    if (const std::string name = frame_name(line); !name.empty()) {
      out += (n++ ? " <- " : "") + name;
    }
  if (!out.empty()) return out;
  const std::string wchan = read_text(dir + "/wchan");
  return wchan.empty() || wchan == "0" ? "" : wchan;
}

}  // namespace ddp::launch::os
