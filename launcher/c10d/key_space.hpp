// KeySpace: the state of one c10d-compatible store without sockets: keys, queues, the
// connections parked in WAIT and the 1.13 watchers. apply() serves one decoded request and
// returns every byte string to send, to the requester and to the connections it wakes or
// notifies. Single-threaded (the server's loop thread); no I/O, no timers.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "launcher/c10d/wire.hpp"

namespace ddp::launch::c10d {

using ConnId = uint64_t;

struct Outgoing {
  ConnId to = 0;
  std::string bytes;
};

class KeySpace {
 public:
  // Serves `r` from connection `from`, appending the replies to `out`. Returns an error line
  // when the request cannot be served (ADD or BARRIER on a value that is not an integer): the caller
  // closes `from`, as c10d's own server does. A new request from a connection still parked
  // in WAIT means its client gave up waiting (1.13 has no CANCEL_WAIT): the old wait is dropped.
  std::optional<std::string> apply(ConnId from, const Request& r, std::vector<Outgoing>& out);
  void disconnect(ConnId id);  // forgets its wait and its watches

  size_t num_keys() const { return data_.size(); }
  size_t parked() const { return waits_.size(); }
  const std::string* find(const std::string& key) const;

 private:
  bool present(const std::string& key) const;
  // Sets key and tells its 1.13 watchers; wakes the connections parked on it unless
  // wake_waiters is false (a BARRIER's count below its world size wakes nobody).
  void store(const std::string& key, std::string value, std::vector<Outgoing>& out, bool wake_waiters = true);
  void park(ConnId id, const std::string& key);
  void wake(const std::string& key, std::vector<Outgoing>& out, bool just_one);
  void notify(uint8_t type, const std::string& key, const std::string& old_value, const std::string& new_value,
              std::vector<Outgoing>& out);
  void cancel_wait(ConnId id);

  // One per request type (apply's switch): each appends its replies to `out`; the ones that
  // can refuse a request return the error line apply returns.
  void queue_push(const Request& r, std::vector<Outgoing>& out);
  void multi_set(const Request& r, std::vector<Outgoing>& out);
  void append(const Request& r, std::vector<Outgoing>& out);
  void compare_set(ConnId from, const Request& r, std::vector<Outgoing>& out);
  void get(ConnId from, const Request& r, std::vector<Outgoing>& out) const;
  void multi_get(ConnId from, const Request& r, std::vector<Outgoing>& out) const;
  std::optional<std::string> add(ConnId from, const Request& r, std::vector<Outgoing>& out);
  void check(ConnId from, const Request& r, std::vector<Outgoing>& out) const;
  void wait(ConnId from, const Request& r, std::vector<Outgoing>& out);
  void cancel_wait_request(ConnId from, std::vector<Outgoing>& out);
  std::optional<std::string> barrier(ConnId from, const Request& r, std::vector<Outgoing>& out);
  void list_keys(ConnId from, std::vector<Outgoing>& out) const;
  void delete_key(ConnId from, const Request& r, std::vector<Outgoing>& out);
  void watch_key(ConnId from, const Request& r, std::vector<Outgoing>& out);
  void queue_pop(ConnId from, const Request& r, std::vector<Outgoing>& out);
  void queue_len(ConnId from, const Request& r, std::vector<Outgoing>& out) const;

  std::unordered_map<std::string, std::string> data_;
  std::unordered_map<std::string, std::deque<std::string>> queues_;
  struct Parked {
    size_t missing = 0;             // keys still missing
    std::vector<std::string> keys;  // the keys it waits on (cancel_wait looks at these only)
  };
  std::unordered_map<ConnId, Parked> waits_;                       // parked connection -> what it waits for
  std::unordered_map<std::string, std::vector<ConnId>> waiting_;   // missing key -> parked connections
  std::unordered_map<std::string, std::vector<ConnId>> watchers_;  // key -> 1.13 callback connections
};

}  // namespace ddp::launch::c10d
