#include "tests/support/connections.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "tests/support/skip.hpp"

namespace ddp::test {
namespace {

// A listener on 127.0.0.1 and one accepted connection to it; true if ss could cut it.
bool try_a_cut() {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int accepted = -1;
  bool cut = false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (listener >= 0 && client >= 0 && ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::listen(listener, 1) == 0 && ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0 &&
      ::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      (accepted = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC)) >= 0) {
    cut = cut_connections(ntohs(addr.sin_port));
  }
  for (int fd : {accepted, client, listener}) {
    if (fd >= 0) ::close(fd);
  }
  return cut;
}

}  // namespace

bool cut_connections(int port) {
  const std::string cmd = "ss -K dst 127.0.0.1 dport = :" + std::to_string(port) + " 2>/dev/null | grep -q ESTAB";
  return std::system(cmd.c_str()) == 0;
}

bool can_cut_connections() {
  static const bool ok = try_a_cut();
  return ok;
}

void require_cut_connections() {
  if (!can_cut_connections()) {
    skip_test(
        "cannot cut connections with `ss -K` here (needs root, iproute2's ss and a kernel with "
        "CONFIG_INET_DIAG_DESTROY)");
  }
}

}  // namespace ddp::test
