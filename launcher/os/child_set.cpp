// Asio implementation of child_set.hpp: a SIGCHLD signal_set, one stream_descriptor per pipe
// (its buffer freed once the stream ends), one timer for the stop's grace or the drain.
#include "launcher/os/child_set.hpp"

#include <signal.h>

#include <array>
#include <optional>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/write.hpp>

namespace ddp::launch::os {
namespace asio = boost::asio;

struct ChildSet::Reader {
  Reader(asio::io_context& loop, UniqueFd read_end, int s)
      : descriptor(loop, read_end.release()), stream(s), buffer(kBufferBytes) {}
  static constexpr size_t kBufferBytes = 65536;
  asio::posix::stream_descriptor descriptor;
  int stream;
  std::vector<char> buffer;  // freed once the stream ended: a set may outlive many children
  bool ended = false;        // end() ran: nothing more is delivered
  bool closing = false;      // close_output: the pending read's handler must not read again
};

struct ChildSet::Child {
  pid_t pid = -1;
  std::optional<ExitStatus> status;
  ChildEvents events;
  UniqueFd out_write, err_write, in_read;  // the child's ends, closed once it started
  std::unique_ptr<Reader> out, err;
  std::optional<asio::posix::stream_descriptor> in;  // the write end of its stdin
  bool reading = false;
  uint64_t bytes = 0;

  std::array<Reader*, 2> readers() { return {out.get(), err.get()}; }
  bool open() const { return !out->ended || !err->ended; }
  bool live() const { return pid > 0 && !status; }
};

ChildSet::ChildSet(asio::io_context& loop, ChildRegistry& children, std::function<void()> after_reap)
    : loop_(loop),
      registry_(children),
      after_reap_(std::move(after_reap)),
      child_signals_(loop, SIGCHLD),
      deadline_(loop) {
  wait_for_children();
}

ChildSet::~ChildSet() { kill_and_reap(); }

void ChildSet::wait_for_children() {
  child_signals_.async_wait([this](const boost::system::error_code& ec, int) {
    if (ec) return;
    reap();
    if (after_reap_) after_reap_();
    wait_for_children();
  });
}

size_t ChildSet::add(SpawnSpec& spec, ChildEvents events, bool with_stdin) {
  auto c = std::make_unique<Child>();
  Pipe out = make_pipe(), err = make_pipe();
  c->events = std::move(events);
  c->out = std::make_unique<Reader>(loop_, std::move(out.read_end), 1);
  c->err = std::make_unique<Reader>(loop_, std::move(err.read_end), 2);
  c->out_write = std::move(out.write_end);
  c->err_write = std::move(err.write_end);
  spec.stdout_fd = c->out_write.get();
  spec.stderr_fd = c->err_write.get();
  if (with_stdin) {
    Pipe in = make_pipe();
    c->in.emplace(loop_, in.write_end.release());
    c->in_read = std::move(in.read_end);
    spec.stdin_fd = c->in_read.get();
  }
  children_.push_back(std::move(c));
  return children_.size() - 1;
}

void ChildSet::started(size_t id, pid_t pid) {
  Child& c = *children_[id];
  c.pid = pid;
  c.out_write.reset();  // the child has its copies: EOF then means it (and its children) are done
  c.err_write.reset();
  c.in_read.reset();
}

pid_t ChildSet::spawn(size_t id, const SpawnSpec& spec) {
  pid_t pid = -1;
  try {
    pid = registry_.spawn(spec);
  } catch (...) {  // not swallowed: it never ran
    abandon(id);
    throw;
  }
  started(id, pid);
  return pid;
}

StartedWorker ChildSet::start(size_t id, const SpawnSpec& spec) {
  StartedWorker s;
  try {
    s = registry_.start(spec);
  } catch (...) {  // not swallowed: it never ran
    abandon(id);
    throw;
  }
  started(id, s.pid);
  return s;
}

void ChildSet::confirm(size_t id, StartedWorker& s) {
  try {
    registry_.confirm(s);
  } catch (...) {  // not swallowed: confirm reaped it, so nothing of it is left to signal or wait for
    abandon(id);
    throw;
  }
}

void ChildSet::release(size_t id) { abandon(id); }

void ChildSet::abandon(size_t id) {
  Child& c = *children_[id];
  c.pid = -1;
  c.out_write.reset();
  c.err_write.reset();
  c.in_read.reset();
  c.in.reset();
  for (Reader* r : c.readers()) {
    r->ended = true;
    boost::system::error_code ignored;
    r->descriptor.close(ignored);
    r->buffer = {};
  }
}

void ChildSet::read_output() {
  for (auto& c : children_) {
    if (c->pid <= 0 || c->reading) continue;
    c->reading = true;
    for (Reader* r : c->readers())
      if (!r->ended) read(*c, *r);
  }
}

void ChildSet::read(Child& c, Reader& r) {
  r.descriptor.async_read_some(asio::buffer(r.buffer), [this, &c, &r](const boost::system::error_code& ec, size_t n) {
    if (r.ended) return;
    c.bytes += n;
    if (c.events.data) c.events.data(r.stream, std::string_view(r.buffer.data(), n));
    if (r.closing) return;  // close_output, posted after this handler, delivers the rest
    if (ec) return end(c, r);
    read(c, r);
  });
}

void ChildSet::end(Child& c, Reader& r) {
  r.ended = true;
  boost::system::error_code ignored;
  r.descriptor.close(ignored);
  r.buffer = {};
  if (c.events.end) c.events.end(r.stream);
}

// What the pipe holds now, without waiting for more.
void ChildSet::drain_now(Child& c, Reader& r) {
  boost::system::error_code ec;
  r.descriptor.non_blocking(true, ec);
  while (!ec) {
    const size_t n = r.descriptor.read_some(asio::buffer(r.buffer), ec);
    c.bytes += n;
    if (n > 0 && c.events.data) c.events.data(r.stream, std::string_view(r.buffer.data(), n));
  }
}

void ChildSet::reap() {
  for (size_t i = 0; i < children_.size(); ++i) {
    Child& c = *children_[i];
    if (!c.live()) continue;
    std::optional<ExitStatus> status = registry_.reap(c.pid);
    if (!status) continue;
    c.status = *status;
    if (c.events.exited) c.events.exited(*status);
  }
}

pid_t ChildSet::pid(size_t id) const { return children_[id]->pid; }

bool ChildSet::running(size_t id) const { return children_[id]->live(); }

size_t ChildSet::running_count() const {
  size_t n = 0;
  for (const auto& c : children_) n += c->live() ? 1 : 0;
  return n;
}

bool ChildSet::output_open() const {
  for (const auto& c : children_)
    if (c->open()) return true;
  return false;
}

bool ChildSet::output_open(size_t id) const { return children_[id]->open(); }

uint64_t ChildSet::bytes_read(size_t id) const { return children_[id]->bytes; }

std::optional<ExitStatus> ChildSet::status(size_t id) const { return children_[id]->status; }

void ChildSet::write_stdin(size_t id, std::string_view data) {
  Child& c = *children_[id];
  boost::system::error_code ignored;  // the child is gone: nothing useful to do
  if (c.in) asio::write(*c.in, asio::buffer(data.data(), data.size()), ignored);
}

void ChildSet::close_stdin(size_t id, std::string_view last) {
  Child& c = *children_[id];
  if (!c.in) return;
  boost::system::error_code ec;
  if (!last.empty()) {
    c.in->non_blocking(true, ec);  // never blocks: a child that reads nothing gets the plain end
    if (!ec) c.in->write_some(asio::buffer(last.data(), last.size()), ec);
  }
  c.in.reset();
}

void ChildSet::signal_running(int signo) {
  for (const auto& c : children_)
    if (c->live()) signal_group(c->pid, signo);
}

void ChildSet::signal_groups(int signo) {
  for (const auto& c : children_)
    if (c->pid > 0 && (!c->status || c->open())) signal_group(c->pid, signo);
}

void ChildSet::signal_every_group(int signo) {
  for (const auto& c : children_) signal_group(c->pid, signo);
}

void ChildSet::begin_stop(int signo, Duration grace, std::function<void(size_t)> late) {
  signal_groups(signo);
  arm_stop(grace, std::move(late));
}

void ChildSet::begin_stop(const std::function<void(size_t)>& ask, Duration grace, std::function<void(size_t)> late) {
  for (size_t i = 0; i < children_.size(); ++i)
    if (children_[i]->live()) ask(i);
  arm_stop(grace, std::move(late));
}

void ChildSet::arm_stop(Duration grace, std::function<void(size_t)> late) {
  if (draining_) return;
  arm_deadline(grace, [this, late = std::move(late)] {
    const size_t n = running_count();
    if (n == 0) return;
    if (late) late(n);
    signal_groups(SIGKILL);
  });
}

void ChildSet::kill() { signal_groups(SIGKILL); }

void ChildSet::drain_after(Duration drain) {
  if (draining_) return;
  draining_ = true;
  arm_deadline(drain, [this] {
    for (auto& c : children_)
      for (Reader* r : c->readers())
        if (!r->ended) r->descriptor.cancel();
  });
}

void ChildSet::close_output(size_t id, std::function<void()> then) {
  Child& c = *children_[id];
  if (!c.open()) return then();
  for (Reader* r : c.readers())
    if (!r->ended) {
      r->closing = true;
      r->descriptor.cancel();  // its handler runs before the post below: it delivers what it read
    }
  asio::post(loop_, [this, id, generation = generation_, then = std::move(then)] {
    if (generation != generation_) return;
    Child& child = *children_[id];
    for (Reader* r : child.readers())
      if (!r->ended) {
        drain_now(child, *r);
        end(child, *r);
      }
    then();
  });
}

void ChildSet::kill_and_reap(int signo) {
  for (const auto& c : children_)
    if (c->live()) signal_group(c->pid, signo);
  for (auto& c : children_)
    if (c->live()) c->status = registry_.wait(c->pid);
}

void ChildSet::clear() {
  children_.clear();
  draining_ = false;
  deadline_.cancel();
  ++generation_;
}

void ChildSet::arm_deadline(Duration after, std::function<void()> fire) {
  deadline_.expires_after(after);
  deadline_.async_wait([this, generation = generation_, fire = std::move(fire)](const boost::system::error_code& ec) {
    if (!ec && generation == generation_) fire();
  });
}

}  // namespace ddp::launch::os
