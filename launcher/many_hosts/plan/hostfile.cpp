#include "launcher/many_hosts/plan/hostfile.hpp"

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/base/text.hpp"
#include "launcher/many_hosts/plan/host_item.hpp"

namespace ddp::launch::many_hosts::plan {
namespace {

constexpr const char* kFormats =
    "write one host per line as 'host slots=N' (DeepSpeed), 'host slots=N max_slots=M' (MPI) or "
    "'host:N' (Horovod); '#' starts a comment";
constexpr int kMaxSlots = 1 << 16;

[[noreturn]] void bad(const std::string& where, std::string_view text, const std::string& problem) {
  throw LaunchError(exit_code::kUsage, fmt::format("{}: '{}': {}; {}", where, text, problem, kFormats));
}

int slot_count(const std::string& where, std::string_view text, const std::string& key, std::string_view value) {
  auto n = parse_natural(value);
  if (!n || *n < 1 || *n > kMaxSlots)
    bad(where, text, fmt::format("{} must be a whole number from 1 to {}, not '{}'", key, kMaxSlots, value));
  return static_cast<int>(*n);
}

bool valid_host_name(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name)
    if (c == '=' || c == ',' || c == '@' || c == ' ' || c == '\t' || c == '"' || c == '\'' || c == '[' || c == ']')
      return false;
  return true;
}

// "host" or "host:N" (Horovod), "[v6]" or "[v6]:N"; N must be there after a ':'. A bare
// IPv6 address is the whole host only where key=value words follow it (bare_address_whole).
HostEntry horovod_item(const std::string& where, std::string_view text, std::string_view word, bool bare_address_whole,
                       bool* slots_after = nullptr) {
  const HostItem item = parse_host_item(word, bare_address_whole);
  if (!item.problem.empty()) bad(where, text, item.problem);
  HostEntry e;
  e.name = item.host;
  if (item.after) e.slots = slot_count(where, text, "the slot count after ':'", *item.after);
  if (slots_after) *slots_after = item.after.has_value();
  if (!valid_host_name(e.name)) bad(where, text, fmt::format("'{}' is not a host name", e.name));
  return e;
}

HostEntry parse_line(const std::string& where, std::string_view line) {
  const std::vector<std::string> words = [&] {
    std::string flat(line);
    for (char& c : flat)
      if (c == '\t') c = ' ';
    return split(flat, ' ', EmptyItems::kSkip);
  }();
  bool horovod = false;  // `host:N`
  HostEntry e = horovod_item(where, line, words[0], words.size() > 1, &horovod);
  int max_slots = 0;
  bool slots_given = false;
  for (size_t i = 1; i < words.size(); ++i) {
    auto kv = split_once(words[i], '=');
    if (horovod) bad(where, line, "'host:N' takes nothing after it");
    if (!kv) bad(where, line, fmt::format("'{}' is not KEY=VALUE", words[i]));
    if (kv->first == "slots") {
      e.slots = slot_count(where, line, "slots", kv->second);
      slots_given = true;
    } else if (kv->first == "max_slots" || kv->first == "max-slots") {
      max_slots = slot_count(where, line, kv->first, kv->second);
    } else {
      bad(where, line, fmt::format("unknown key '{}' (known: slots, max_slots)", kv->first));
    }
  }
  if (max_slots != 0 && max_slots < e.slots)
    bad(where, line, fmt::format("max_slots={} is less than slots={}", max_slots, e.slots));
  if (max_slots != 0 && !slots_given) e.slots = max_slots;  // MPI: `host max_slots=N` alone offers N
  return e;
}

void check_unique(const std::vector<HostEntry>& hosts, const HostEntry& e, const std::string& where) {
  for (const auto& h : hosts)
    if (h.name == e.name)
      throw LaunchError(exit_code::kUsage,
                        h.line > 0
                            ? fmt::format("{}: host '{}' is already listed on line {}; list each host once "
                                          "with all its slots",
                                          where, bracketed(e.name), h.line)
                            : fmt::format("{}: host '{}' is listed twice; list each host once with all its slots",
                                          where, bracketed(e.name)));
}

}  // namespace

std::vector<HostEntry> parse_hostfile(std::string_view text, const std::string& source) {
  std::vector<HostEntry> hosts;
  int number = 0;
  for (const std::string& raw : split(text, '\n')) {
    ++number;
    std::string line = raw;
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    line = trim(line);
    if (line.empty()) continue;
    const std::string where = fmt::format("hostfile {}:{}", source, number);
    HostEntry e = parse_line(where, line);
    e.line = number;
    check_unique(hosts, e, where);
    hosts.push_back(std::move(e));
  }
  if (hosts.empty())
    throw LaunchError(exit_code::kUsage, fmt::format("hostfile {} lists no host; {}", source, kFormats));
  return hosts;
}

std::vector<HostEntry> parse_host_list(std::string_view text) {
  std::vector<HostEntry> hosts;
  const std::string where = "--hosts";
  for (const std::string& item : split(text, ',')) {
    const std::string t = trim(item);
    if (t.empty())
      throw LaunchError(exit_code::kUsage,
                        fmt::format("--hosts '{}': an empty item; give HOST[:SLOTS],... such as h1:4,h2:4", text));
    HostEntry e = horovod_item(where, text, t, false);
    check_unique(hosts, e, where);
    hosts.push_back(std::move(e));
  }
  return hosts;
}

}  // namespace ddp::launch::many_hosts::plan
