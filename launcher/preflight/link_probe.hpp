// The pre-flight link checks' I/O (docs/preflight.md "Links"): a node's probe endpoint, a TCP
// listener (net::listen_acceptor) whose connections are served on the probe's own Asio loop
// thread (no loop of the launcher runs during a rendezvous), and the measurements a node makes against another's: the
// round trip of a one-byte ping (median of kPings), MB/s each way (frames sent for `ms`, counted by the receiver), and
// the offset of the other's clock (CLOCK_REALTIME; the exchange with the shortest round trip of kClockSamples). Blocks
// for about 2 x ms + the pings, every connect, read and write within 5 s (a peer that does not answer); never throws: a
// failure is the figures' `error`. The wire: one command byte ('P' ping, 'U' upload, 'D' download for N ns, 'T' time),
// then its frames (u32 length, payload; length 0 ends), u64 values in network byte order.
#pragma once

#include <memory>
#include <string>

#include "launcher/preflight/link_verdict.hpp"  // LinkFigures, ClockFigures

namespace ddp::launch::preflight {

class ProbeServer {
 public:
  // Listens on host:0 ("" or "0.0.0.0": every IPv4 address). Throws net::ListenError saying
  // why it cannot.
  explicit ProbeServer(const std::string& host);
  ~ProbeServer();  // stops the loop (its connections close) and joins its thread
  ProbeServer(const ProbeServer&) = delete;
  ProbeServer& operator=(const ProbeServer&) = delete;
  int port() const { return port_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

LinkFigures measure_link(const std::string& host, int port, double ms);
// Connects to host:port and closes: "" when it could, else why.
std::string reach(const std::string& host, int port);
ClockFigures measure_clock(const std::string& host, int port);

}  // namespace ddp::launch::preflight
