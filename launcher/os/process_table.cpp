// /proc implementation of process_table.hpp.
#include "launcher/os/process_table.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>

namespace ddp::launch::os {
namespace {

// A small /proc file, whole; nullopt if it cannot be opened (the process is gone).
std::optional<std::string> read_proc_file(const std::string& path, size_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buf[4096];
  ssize_t n;
  while (text.size() < limit && (n = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return text;
}

bool all_digits(const char* s) {
  if (!*s) return false;
  for (; *s; ++s)
    if (*s < '0' || *s > '9') return false;
  return true;
}

}  // namespace

std::optional<ProcessEntry> parse_proc_stat(const std::string& line) {
  const size_t open = line.find('(');
  const size_t close = line.rfind(')');  // a command name may hold ')' itself
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  ProcessEntry e;
  e.pid = static_cast<pid_t>(std::atol(line.c_str()));
  e.comm = line.substr(open + 1, close - open - 1);
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  std::vector<std::string> fields;  // from the state (field 3) on
  while (fields.size() < 20 && rest >> field) fields.push_back(field);
  if (fields.size() < 20 || e.pid <= 0) return std::nullopt;
  e.state = fields[0][0];
  e.ppid = static_cast<pid_t>(std::atol(fields[1].c_str()));
  e.pgid = static_cast<pid_t>(std::atol(fields[2].c_str()));
  e.sid = static_cast<pid_t>(std::atol(fields[3].c_str()));
  e.start_ticks = std::strtoull(fields[19].c_str(), nullptr, 10);  // field 22
  return e;
}

std::optional<ProcessEntry> read_process(pid_t pid) {
  std::optional<std::string> line = read_proc_file("/proc/" + std::to_string(pid) + "/stat", 4096);
  if (!line) return std::nullopt;
  return parse_proc_stat(*line);
}

std::vector<ProcessEntry> read_process_table() {
  std::vector<ProcessEntry> table;
  DIR* dir = ::opendir("/proc");
  if (!dir) return table;
  while (const dirent* d = ::readdir(dir)) {
    if (!all_digits(d->d_name)) continue;
    if (std::optional<ProcessEntry> e = read_process(static_cast<pid_t>(std::atol(d->d_name))))
      table.push_back(std::move(*e));
  }
  ::closedir(dir);
  std::sort(table.begin(), table.end(), [](const ProcessEntry& a, const ProcessEntry& b) { return a.pid < b.pid; });
  return table;
}

std::vector<ProcessEntry> descendants(const std::vector<ProcessEntry>& table, pid_t root,
                                      const std::set<pid_t>& pruned) {
  std::multimap<pid_t, const ProcessEntry*> children;
  for (const ProcessEntry& e : table) children.emplace(e.ppid, &e);
  std::vector<ProcessEntry> out;
  std::vector<pid_t> frontier{root};
  while (!frontier.empty()) {
    const pid_t parent = frontier.back();
    frontier.pop_back();
    auto [first, last] = children.equal_range(parent);
    for (auto it = first; it != last; ++it) {
      const ProcessEntry& child = *it->second;
      if (child.pid == root || pruned.count(child.pid)) continue;
      out.push_back(child);
      frontier.push_back(child.pid);
    }
  }
  std::sort(out.begin(), out.end(), [](const ProcessEntry& a, const ProcessEntry& b) { return a.pid < b.pid; });
  return out;
}

std::optional<std::string> environ_value(pid_t pid, const std::string& name) {
  std::optional<std::string> env = read_proc_file("/proc/" + std::to_string(pid) + "/environ", 1 << 20);
  if (!env) return std::nullopt;
  const std::string key = name + "=";
  size_t at = 0;
  while (at < env->size()) {
    const size_t end = std::min(env->find('\0', at), env->size());
    if (env->compare(at, key.size(), key) == 0) return env->substr(at + key.size(), end - at - key.size());
    at = end + 1;
  }
  return std::nullopt;
}

std::string command_line(pid_t pid, size_t max_chars) {
  std::optional<std::string> text = read_proc_file("/proc/" + std::to_string(pid) + "/cmdline", max_chars + 1);
  if (!text) return "";
  while (!text->empty() && text->back() == '\0') text->pop_back();
  std::replace(text->begin(), text->end(), '\0', ' ');
  if (text->size() > max_chars) text->resize(max_chars);
  return *text;
}

}  // namespace ddp::launch::os
