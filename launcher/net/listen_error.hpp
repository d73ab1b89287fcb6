// ListenError: a server of the launcher (the agent store, the workers' store, the status
// endpoint) could not listen. Apart from listen.hpp so that a server's header can name it
// without including Asio.
#pragma once

#include <stdexcept>
#include <string>

namespace ddp::launch::net {

// Listening failed: the port is taken (address_in_use()), the host is not an address (or
// does not resolve), or another OS error. The message is "<where>: <why>".
class ListenError : public std::runtime_error {
 public:
  ListenError(const std::string& message, bool address_in_use)
      : std::runtime_error(message), address_in_use_(address_in_use) {}
  bool address_in_use() const { return address_in_use_; }

 private:
  bool address_in_use_;
};

}  // namespace ddp::launch::net
