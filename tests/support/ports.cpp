#include "tests/support/ports.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>

namespace ddp::test {
namespace {

constexpr int kLowest = 10000;

// The first port of the kernel's ephemeral range: what connect() gives a connection's own end.
int ephemeral_low() {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0;
  return range >> low && low > 0 ? low : 32768;
}

// Binds port (0: the kernel's choice) on every address; the port bound, or 0.
int try_bind(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("free_port: socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof(addr);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  return ok ? ntohs(addr.sin_port) : 0;
}

}  // namespace

int free_port() {
  static std::mutex given_lock;
  static std::set<int> given;  // never the same port twice in one process
  const std::lock_guard<std::mutex> lock(given_lock);
  const int top = ephemeral_low();
  if (top > kLowest + 1000) {
    std::mt19937 rng(static_cast<unsigned>(::getpid()) ^
                     static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()));
    std::uniform_int_distribution<int> pick(kLowest, top - 1);
    for (int attempt = 0; attempt < 200; ++attempt) {
      const int candidate = pick(rng);
      if (given.count(candidate)) continue;
      if (const int port = try_bind(candidate)) return *given.insert(port).first;
    }
  }
  if (const int port = try_bind(0)) return port;  // the range is crowded: the kernel's choice
  throw std::runtime_error("free_port: cannot bind a port");
}

}  // namespace ddp::test
