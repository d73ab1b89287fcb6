// Signal names <-> numbers, for flags, reports and notices. Pure.
#include "launcher/base/signal_names.hpp"

#include <csignal>
#include <cctype>

#include <fmt/format.h>

#include "launcher/base/text.hpp"

namespace ddp::launch {
namespace {

struct SignalEntry {
  int number;
  const char* name;
};
constexpr SignalEntry kSignals[] = {
    {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},     {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},   {SIGTRAP, "SIGTRAP"},
    {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},     {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"},
    {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},   {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},
    {SIGCHLD, "SIGCHLD"}, {SIGCONT, "SIGCONT"},   {SIGSTOP, "SIGSTOP"}, {SIGTSTP, "SIGTSTP"}, {SIGTTIN, "SIGTTIN"},
    {SIGTTOU, "SIGTTOU"}, {SIGURG, "SIGURG"},     {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"}, {SIGVTALRM, "SIGVTALRM"},
    {SIGPROF, "SIGPROF"}, {SIGWINCH, "SIGWINCH"}, {SIGIO, "SIGIO"},     {SIGPWR, "SIGPWR"},   {SIGSYS, "SIGSYS"},
};

}  // namespace

std::string signal_name(int signo) {
  for (const auto& e : kSignals)
    if (e.number == signo) return e.name;
  return fmt::format("SIG{}", signo);
}

int signal_number(std::string_view name) {
  if (name.empty()) return -1;
  if (auto n = parse_natural(name))  // a number: at most 3 digits, as in "15"
    return (name.size() <= 3 && *n > 0 && *n < NSIG) ? static_cast<int>(*n) : -1;
  std::string full(name);
  for (auto& c : full) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (full.rfind("SIG", 0) != 0) full = "SIG" + full;
  for (const auto& e : kSignals)
    if (full == e.name) return e.number;
  return -1;
}

std::string stopped_how(int signo, const std::optional<std::string>& note) {
  if (note) return ": " + *note;
  return " by " + signal_name(signo);
}

}  // namespace ddp::launch
