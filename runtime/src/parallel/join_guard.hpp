// The collective guard of ddp::join(): while a join is open in this process, only DDP's own
// join-matched communication may run (threads marked Internal); any other synchronous
// collective throws DdpError instead of hanging against ranks that have joined. Thread-safe.
#pragma once

namespace ddp::detail::join_guard {

// A join scope opens / closes in this process (nesting is refused by join()).
void open();
void close() noexcept;
bool is_open();

// RAII: the calling thread runs DDP's own join-matched collectives.
class Internal {
 public:
  Internal();
  ~Internal();
  Internal(const Internal&) = delete;
  Internal& operator=(const Internal&) = delete;
};

// Throws DdpError naming `collective` when a join is open and the thread is not Internal.
void check(const char* collective);

}  // namespace ddp::detail::join_guard
