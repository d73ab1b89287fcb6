#include "launcher/os/signal_fd.hpp"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"

namespace ddp::launch::os {
namespace {

sigset_t set_of(const std::vector<int>& signals) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : signals) sigaddset(&set, s);
  return set;
}

}  // namespace

SignalFd::SignalFd(const std::vector<int>& signals) : signals_(signals) {
  const sigset_t set = set_of(signals);
  if (sigprocmask(SIG_BLOCK, &set, nullptr) != 0 ||
      (fd_.reset(signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)), !fd_.valid()))
    throw LaunchError(exit_code::kInternalError, std::string("signalfd: ") + std::strerror(errno));
}

SignalFd::~SignalFd() {
  const sigset_t set = set_of(signals_);
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
}

std::vector<int> SignalFd::take() {
  std::vector<int> out;
  signalfd_siginfo info;
  while (read(fd_.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info))
    out.push_back(static_cast<int>(info.ssi_signo));
  return out;
}

}  // namespace ddp::launch::os
