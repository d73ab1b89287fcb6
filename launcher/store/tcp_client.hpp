// TcpStoreClient: the Store interface over one TCP connection to a StoreServer. Every
// call blocks on a private io_context with a deadline, so it may be called from inside
// another io_context's handler. While a call waits it PINGs every heartbeat/3; between
// calls the owner keeps a heartbeat alive with ping(). Not thread-safe (one per thread),
// except interrupt(). With a reconnect window, a connection that breaks is re-opened and
// re-authenticated, and the request retried where that is safe; otherwise (or once the
// window has passed) every call throws StoreUnavailable.
#pragma once

#include <chrono>
#include <functional>
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
  Duration connect_timeout{30000};    // keep retrying (with backoff) a refused connection until this
  Duration request_timeout{30000};    // a non-waiting request's reply (waits get their own timeout + this)
  uint32_t heartbeat_timeout_ms = 0;  // 0: the server does not watch this client
  // How long after the last bytes from the store, once the connection broke (reset, EOF,
  // a reply missing its deadline), the client keeps reconnecting; 0: never (the first loss
  // is final). Keep it alive between calls (ping(), or a heartbeat: waits ping). A refused connection
  // ends it at once (nobody listens: the store is gone). Retried after a reconnect: every
  // read and wait (what is left of its timeout), SET, MULTI_SET, PING, COMPARE_SET (it
  // returns the value now stored: after a lost reply, our own value if ours was applied),
  // and ADD, sent as ADD_ONCE with a request id when the client has a name (the server
  // applies it once). Never retried: DELETE, and ADD without a name.
  Duration reconnect_window{0};
  // Asked between the first connection's attempts, at least every 100 ms while it retries:
  // true ends them at once with StoreUnavailable (a stop signal; a port nobody listens on that
  // the caller may host itself). `refused`: the last attempt was refused (nobody listens there).
  std::function<bool(bool refused)> give_up_connecting;
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
  std::string compare_set(const std::string& key, const std::string& expected, const std::string& desired) override;
  bool wait(const std::vector<std::string>& keys, Duration timeout) override;
  bool check(const std::vector<std::string>& keys) override;
  bool remove(const std::string& key) override;
  std::vector<std::string> multi_get(const std::vector<std::string>& keys, Duration timeout) override;
  void multi_set(const std::vector<std::pair<std::string, std::string>>& items) override;
  std::optional<std::string> try_get(const std::string& key) override;

  void ping();
  // Thread-safe: makes the call in progress (or the next one) throw StoreUnavailable soon,
  // and every later one; for a thread blocked in a wait that must end (shutdown).
  void interrupt();
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
