// The etcd layer's errors under one root: whatever launcher/etcd/ throws is an EtcdError,
// so a caller translates them with one catch. (Bad endpoint text is no etcd error: it is
// base's HostPortError, from cli/'s read of --rdzv-endpoint or parse_endpoints, before any client exists.) The kinds,
// for the callers that react differently: no member answered in time, a configuration etcd rejects, a reply that is not
// etcd's, one member's connection failing.
#pragma once

#include <stdexcept>
#include <string>

namespace ddp::launch::etcd {

class EtcdError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// No member answered within the request timeout (every one unreachable or unavailable).
class EtcdUnavailable : public EtcdError {
 public:
  using EtcdError::EtcdError;
};

// A configuration error no retry fixes: wrong credentials, a TLS certificate not trusted,
// a file that cannot be read. The message says what to change.
class EtcdRejected : public EtcdError {
 public:
  using EtcdError::EtcdError;
};

// A reply etcd's gateway should never send (or not etcd at all).
class EtcdProtocolError : public EtcdError {
 public:
  using EtcdError::EtcdError;
};

// One member cannot be reached or the exchange with it broke (http_connection). The client
// fails over on it; `rejected`: not worth retrying on this or another member (TLS
// verification failed: a configuration error), the client raises EtcdRejected instead.
class ConnectionError : public EtcdError {
 public:
  ConnectionError(const std::string& what, bool rejected) : EtcdError(what), rejected_(rejected) {}
  bool rejected() const { return rejected_; }

 private:
  bool rejected_;
};

}  // namespace ddp::launch::etcd
