// libddp's standby hook: a constructor that runs before main() (and before this program's
// own static initialisers). Without DDP_LAUNCH_STANDBY_FD it does nothing. With it, the
// process is a launcher's pre-warmed standby: its shared libraries (LibTorch) are loaded
// already; it says it is ready (one byte), blocks until the launcher hands it a worker's
// identity (contract/standby_handoff.hpp), applies it (environment, cwd, stdin/stdout/
// stderr) and returns, so that main() runs as in a freshly exec'd worker. A program that calls
// ddp::standby_point() (standby_point.cpp, linked only then: a weak reference tells) waits
// there instead: the hook only hides the slot's identity from the code above the point
// (ddp_standby_identity_hidden) and returns at once. Torch-free. The launcher hands over only
// the argv this process was started with, so main()'s argv is already right. Linked into every
// program that links ddp::ddp (--undefined=ddp_standby_hook).
#include <fcntl.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "contract/standby_handoff.hpp"
#include "runtime/src/process/standby_hook.hpp"

extern "C" {
// The marker the launcher scans for; referenced below so that it stays in the binary.
__attribute__((used)) const char ddp_standby_hook_marker[] = "DDP_LAUNCH_STANDBY_HOOK_V1";
void ddp_standby_hook();
// Defined by standby_point.cpp, which the linker takes out of libddp.a only for a program that
// calls ddp::standby_point(): null (a weak reference) in every other program.
extern const int ddp_standby_point_linked __attribute__((weak));
}

namespace {

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "libddp standby: %s: %s; exiting (the launcher starts this worker cold)\n", what,
               std::strerror(errno));
  ::_exit(127);
}

// Reads exactly n bytes (the first recvmsg also takes the fds); false on EOF.
bool read_exact(int fd, char* out, size_t n, int* fds, bool* fds_taken) {
  size_t got = 0;
  while (got < n) {
    struct iovec iov {
      out + got, n - got
    };
    alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int) * ddp::standby::kFdCount)];
    struct msghdr msg {};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t r = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) die("cannot read the handoff");
    if (r == 0) return false;
    for (struct cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && !*fds_taken &&
          c->cmsg_len == CMSG_LEN(sizeof(int) * ddp::standby::kFdCount)) {
        std::memcpy(fds, CMSG_DATA(c), sizeof(int) * ddp::standby::kFdCount);
        *fds_taken = true;
      }
    got += static_cast<size_t>(r);
  }
  return true;
}

// A rank other than 0 waits (at most kStoreWait) until rank 0's store (MASTER_ADDR:
// MASTER_PORT) accepts connections: a restarted rank 0 listens within milliseconds, but a
// refused connect makes c10d's TCPStore client retry only a second later. Only when worker
// rank 0 hosts the store: the launcher's own (TORCHELASTIC_USE_AGENT_STORE=True) listens
// before any worker starts.
void await_store() {
  const char* agent_store = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  if (agent_store && std::strcmp(agent_store, "True") == 0) return;
  constexpr auto kStoreWait = std::chrono::seconds(1);
  const char* rank = std::getenv("RANK");
  const char* addr = std::getenv("MASTER_ADDR");
  const char* port = std::getenv("MASTER_PORT");
  if (!rank || std::strcmp(rank, "0") == 0 || !addr || !*addr || !port || !*port) return;
  const auto deadline = std::chrono::steady_clock::now() + kStoreWait;
  while (std::chrono::steady_clock::now() < deadline) {
    struct addrinfo hints {};
    hints.ai_socktype = SOCK_STREAM;
    struct addrinfo* found = nullptr;
    if (::getaddrinfo(addr, port, &hints, &found) != 0) return;  // unresolvable: c10d will say so
    bool accepted = false;
    for (struct addrinfo* a = found; a && !accepted; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      accepted = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0;
      ::close(fd);
    }
    ::freeaddrinfo(found);
    if (accepted) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// The variables that say who a worker is (ddp/env.hpp), hidden from the code above
// ddp::standby_point() in a standby: they hold an earlier attempt's values.
constexpr const char* kIdentity[] = {"RANK",
                                     "WORLD_SIZE",
                                     "LOCAL_RANK",
                                     "LOCAL_WORLD_SIZE",
                                     "GROUP_RANK",
                                     "GROUP_WORLD_SIZE",
                                     "ROLE_RANK",
                                     "ROLE_WORLD_SIZE",
                                     "MASTER_ADDR",
                                     "MASTER_PORT",
                                     "TORCHELASTIC_RESTART_COUNT",
                                     "TORCHELASTIC_RUN_ID",
                                     "TORCHELASTIC_ERROR_FILE",
                                     "DDP_LAUNCH_PROGRESS_FILE"};

}  // namespace

namespace ddp::detail {

// Says ready, blocks for the handoff and becomes that worker (environment, cwd, fds); exits
// when the launcher lets the standby go.
void become_handed_worker(int fd) {
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  const char ready = ddp::standby::kReadyByte;
  while (::send(fd, &ready, 1, MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
  int fds[ddp::standby::kFdCount] = {-1, -1, -1};
  bool fds_taken = false;
  char prefix[4];
  if (!read_exact(fd, prefix, sizeof prefix, fds, &fds_taken)) ::_exit(0);  // the launcher let it go
  const auto length = ddp::standby::payload_length(std::string_view(prefix, sizeof prefix));
  if (!length) die("the handoff is too large");
  std::string payload(*length, '\0');
  if (!read_exact(fd, payload.data(), payload.size(), fds, &fds_taken)) die("the handoff was cut short");
  ::close(fd);
  std::string error;
  const auto handoff = ddp::standby::decode_handoff(payload, &error);
  if (!handoff || !fds_taken) {
    std::fprintf(stderr, "libddp standby: %s\n", handoff ? "the handoff carried no fds" : error.c_str());
    ::_exit(127);
  }
  ::clearenv();
  for (const auto& entry : handoff->env) {
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    ::setenv(entry.substr(0, eq).c_str(), entry.c_str() + eq + 1, 1);
  }
  if (!handoff->cwd.empty() && ::chdir(handoff->cwd.c_str()) != 0) die("cannot change to the worker's directory");
  for (int i = 0; i < static_cast<int>(ddp::standby::kFdCount); ++i) {
    if (::dup2(fds[i], i) < 0) die("cannot take the worker's stdin/stdout/stderr");
    ::close(fds[i]);
  }
  (void)ddp_standby_hook_marker[0];
  await_store();
}

}  // namespace ddp::detail

extern "C" __attribute__((constructor(101))) void ddp_standby_hook() {
  const char* fd_text = std::getenv(ddp::standby::kFdEnvVar);
  if (!fd_text || !*fd_text) return;
  if (&ddp_standby_point_linked != nullptr) {  // main() runs up to ddp::standby_point()
    for (const char* name : kIdentity) ::unsetenv(name);
    ::setenv(ddp::detail::kStandbyPendingEnvVar, "1", 1);
    return;
  }
  ddp::detail::become_handed_worker(std::atoi(fd_text));
}
