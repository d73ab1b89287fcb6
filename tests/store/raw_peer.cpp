#include "tests/store/raw_peer.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <utility>

#include "launcher/store/codec.hpp"

namespace ddp::launch::store::test {

RawPeer::RawPeer(uint16_t port, int recv_buffer_bytes, const std::string& source) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error("RawPeer: no socket (the open-file limit?)");
  if (recv_buffer_bytes > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &recv_buffer_bytes, sizeof(int));
  if (!source.empty()) {
    sockaddr_in from{};
    from.sin_family = AF_INET;
    if (::inet_pton(AF_INET, source.c_str(), &from.sin_addr) != 1 ||
        ::bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0) {
      ::close(fd_);
      throw std::runtime_error("RawPeer: cannot bind to source address " + source);
    }
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd_);
    throw std::runtime_error("RawPeer: connect failed");
  }
  const int one = 1;  // as TcpStoreClient: no Nagle delay on a request's last segment
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

RawPeer::~RawPeer() {
  if (fd_ >= 0) ::close(fd_);
}

bool RawPeer::send(const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// Waits until the deadline for more bytes and appends them to pending_. False when the
// deadline passed or the peer closed (closed_ is then set).
bool RawPeer::receive_more(std::chrono::steady_clock::time_point deadline) {
  while (!closed_) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[65536];
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) {
      closed_ = true;
      return false;
    }
    pending_.append(buf, static_cast<size_t>(n));
    return true;
  }
  return false;
}

std::optional<std::string> RawPeer::read_frame(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (pending_.size() >= 4) {
      const uint32_t len = (uint32_t{static_cast<uint8_t>(pending_[0])} << 24) |
                           (uint32_t{static_cast<uint8_t>(pending_[1])} << 16) |
                           (uint32_t{static_cast<uint8_t>(pending_[2])} << 8) | static_cast<uint8_t>(pending_[3]);
      if (pending_.size() >= 4 + len) {
        std::string payload = pending_.substr(4, len);
        pending_.erase(0, 4 + len);
        return payload;
      }
    }
    if (!receive_more(deadline)) return std::nullopt;
  }
}

std::string RawPeer::drain(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (receive_more(deadline)) {
  }
  return std::exchange(pending_, std::string());
}

void RawPeer::handshake(const std::string& name, uint32_t heartbeat_ms) {
  auto greeting = read_frame(std::chrono::seconds(5));
  if (!greeting) throw std::runtime_error("RawPeer: no greeting");
  Hello h;
  h.name = name;
  h.heartbeat_ms = heartbeat_ms;
  send(encode_hello(h));
  auto reply = read_frame(std::chrono::seconds(5));
  if (!reply || decode_response(*reply).status != Status::kOk) throw std::runtime_error("RawPeer: HELLO refused");
}

std::string request_bytes(Op op, std::vector<std::string> keys, std::vector<std::string> values, int64_t delta,
                          uint32_t timeout_ms) {
  Request q;
  q.op = op;
  q.keys = std::move(keys);
  q.values = std::move(values);
  q.delta = delta;
  q.timeout_ms = timeout_ms;
  return encode_request(q);
}

Response ok_reply(RawPeer& peer, std::chrono::milliseconds timeout, const std::string& what) {
  auto frame = peer.read_frame(timeout);
  if (!frame) throw std::runtime_error(what + ": no reply");
  Response r = decode_response(*frame);
  if (r.status != Status::kOk) throw std::runtime_error(what + ": " + (r.message.empty() ? "not OK" : r.message));
  return r;
}

}  // namespace ddp::launch::store::test
