// TcpStoreClient: the Store interface over one TCP connection to a StoreServer. Every
// call blocks on a private io_context with a deadline, so it may be called from inside
// another io_context's handler. While a call waits it PINGs every heartbeat/3; between
// calls the owner keeps a heartbeat alive with ping(). Not thread-safe: one per thread.
// After a lost connection or a missed deadline every call throws StoreUnavailable.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "launcher/store/store.hpp"

namespace ddp::launch::store {

struct ClientOptions {
  // The shared secret (empty: none); the launcher takes it from --rdzv-conf token=... or
  // DDP_LAUNCH_RDZV_TOKEN. Never sent: the client answers the server's nonce with an HMAC.
  std::string token;
  // Optional identity; with heartbeat_timeout_ms > 0 the server sets __dropped__/<name>
  // when this client disappears without close_gracefully() or stays silent too long.
  std::string name;
  Duration connect_timeout{30000};  // keep retrying (with backoff) a refused connection until this
  Duration request_timeout{30000};  // a non-waiting request's reply (waits get their own timeout + this)
  uint32_t heartbeat_timeout_ms = 0;  // 0: the server does not watch this client
};

class TcpStoreClient : public Store {
 public:
  // Connects and authenticates; throws StoreUnavailable when the store cannot be reached
  // within connect_timeout or rejects us.
  TcpStoreClient(std::string host, uint16_t port, ClientOptions options = {});
  ~TcpStoreClient() override;
  TcpStoreClient(const TcpStoreClient&) = delete;
  TcpStoreClient& operator=(const TcpStoreClient&) = delete;

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, Duration timeout) override;
  int64_t add(const std::string& key, int64_t delta) override;
  std::string compare_set(const std::string& key, const std::string& expected,
                          const std::string& desired) override;
  bool wait(const std::vector<std::string>& keys, Duration timeout) override;
  bool check(const std::vector<std::string>& keys) override;
  bool remove(const std::string& key) override;
  std::vector<std::string> multi_get(const std::vector<std::string>& keys, Duration timeout) override;
  void multi_set(const std::vector<std::pair<std::string, std::string>>& items) override;
  std::optional<std::string> try_get(const std::string& key) override;

  void ping();
  // Says GOODBYE (no __dropped__ key) and closes. Further calls throw StoreUnavailable.
  void close_gracefully();
  // Closes without GOODBYE, as a crash would (tests use it).
  void close_abruptly();
  const std::string& endpoint() const;  // "host:port"

 private:
  class Connection;
  std::unique_ptr<Connection> conn_;
};

}  // namespace ddp::launch::store
