#include "launcher/many_hosts/host_output.hpp"

#include <algorithm>

namespace ddp::launch::many_hosts {

HostOutput::HostOutput(std::vector<std::string> prefixes)
    : prefixes_(std::move(prefixes)), at_line_start_(prefixes_.size(), true), after_cr_(prefixes_.size(), false) {}

std::string HostOutput::add(int source, std::string_view chunk) {
  std::string out;
  if (chunk.empty()) return out;
  const auto s = static_cast<size_t>(source);
  if (open_ != -1 && open_ != source) {
    out += '\n';
    at_line_start_[static_cast<size_t>(open_)] = true;
    after_cr_[static_cast<size_t>(open_)] = false;
  }
  for (char c : chunk) {
    // The prefix starts each line, and again after a '\r' redraw (not before the '\n' of "\r\n").
    if (at_line_start_[s] && !(c == '\n' && after_cr_[s])) out += prefixes_[s];
    at_line_start_[s] = false;
    out += c;
    after_cr_[s] = c == '\r';
    if (c == '\n' || c == '\r') at_line_start_[s] = true;
  }
  open_ = chunk.back() == '\n' ? -1 : source;
  return out;
}

std::string HostOutput::finish(int source) {
  const auto s = static_cast<size_t>(source);
  at_line_start_[s] = true;
  after_cr_[s] = false;
  if (open_ != source) return {};
  open_ = -1;
  return "\n";
}

std::vector<std::string> host_prefixes(const std::vector<std::string>& hosts) {
  size_t width = 0;
  for (const auto& h : hosts) width = std::max(width, h.size());
  std::vector<std::string> out;
  for (const auto& h : hosts) out.push_back("[" + h + "]" + std::string(width - h.size() + 1, ' '));
  return out;
}

}  // namespace ddp::launch::many_hosts
