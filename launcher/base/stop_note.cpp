#include "launcher/base/stop_note.hpp"

#include <mutex>

#include "launcher/base/signal_names.hpp"

namespace ddp::launch {
namespace {

std::mutex& note_mutex() {
  static std::mutex m;
  return m;
}

std::optional<std::string>& noted() {
  static std::optional<std::string> reason;
  return reason;
}

}  // namespace

void note_stop_reason(std::string reason) {
  std::lock_guard<std::mutex> lock(note_mutex());
  if (!noted()) noted() = std::move(reason);
}

std::optional<std::string> stop_reason() {
  std::lock_guard<std::mutex> lock(note_mutex());
  return noted();
}

std::string stopped_how(int signo, const std::optional<std::string>& reason) {
  if (reason) return ": " + *reason;
  return " by " + signal_name(signo);
}

}  // namespace ddp::launch
