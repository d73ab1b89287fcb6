// StopInputWatch: the launching machine's session on a descriptor (a many-host agent's stdin),
// read on the node's event loop, never by a thread of its own. A line that `decode` recognises
// as a stop message says why the job stops; the end of the input stops it like a SIGTERM would
// (a stop request, so the report tells the reason, not a signal), with that reason or `lost`
// (this host lost its session). Without a stop message, a node of an elastic job
// (leave_when_lost) leaves at once instead, as a lost node does: its workers die with it.
// Single-threaded: the loop's thread only.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include "launcher/supervise/stop_requests.hpp"

namespace ddp::launch::supervise {

struct StopInputSpec {
  int fd = -1;  // -1: no such input
  std::function<std::optional<std::string>(const std::string& line)> decode;
  std::string lost;
  bool leave_when_lost = false;
};

class StopInputWatch {
 public:
  // Starts reading spec.fd (which stays open: the watch never closes it).
  StopInputWatch(boost::asio::io_context& loop, StopInputSpec spec, StopRequests& stops);
  ~StopInputWatch();
  StopInputWatch(const StopInputWatch&) = delete;
  StopInputWatch& operator=(const StopInputWatch&) = delete;

 private:
  void read();
  void take(size_t n);
  void ended();

  StopInputSpec spec_;
  StopRequests& stops_;
  boost::asio::posix::stream_descriptor input_;
  std::array<char, 256> buf_{};
  std::string pending_;                // a line not yet ended
  std::optional<std::string> reason_;  // the first stop message
  bool done_ = false;
};

}  // namespace ddp::launch::supervise
