#include "launcher/supervise/stop_input.hpp"

#include <signal.h>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/os/process.hpp"

namespace ddp::launch::supervise {
namespace {

constexpr size_t kMaxPendingBytes = 16u << 20;  // a line longer than this is no stop message

}  // namespace

StopInputWatch::StopInputWatch(boost::asio::io_context& loop, StopInputSpec spec, StopRequests& stops)
    : spec_(std::move(spec)), stops_(stops), input_(loop, spec_.fd) {
  read();
}

StopInputWatch::~StopInputWatch() {
  boost::system::error_code ignored;
  input_.cancel(ignored);
  input_.release();  // the descriptor is the process's stdin: not ours to close
}

void StopInputWatch::read() {
  input_.async_read_some(boost::asio::buffer(buf_), [this](const boost::system::error_code& ec, size_t n) {
    if (ec == boost::asio::error::operation_aborted || done_) return;
    if (ec || n == 0) return ended();
    take(n);
    read();
  });
}

void StopInputWatch::take(size_t n) {
  pending_.append(buf_.data(), n);
  for (size_t nl; (nl = pending_.find('\n')) != std::string::npos; pending_.erase(0, nl + 1))
    if (auto said = spec_.decode(pending_.substr(0, nl)); said && !reason_) reason_ = said;
  if (pending_.size() > kMaxPendingBytes) pending_.clear();
}

void StopInputWatch::ended() {
  done_ = true;
  if (!reason_ && spec_.leave_when_lost) {  // gone from the job as a lost node is: the others go on without it
    console::launcher_notice(spec_.lost + ": leaving the elastic job as a lost node (its workers killed)");
    os::exit_at_once(exit_code::from_signal(SIGKILL));  // the workers die with it (PR_SET_PDEATHSIG)
  }
  console::launcher_notice(fmt::format("stopping (as on SIGTERM): {}", reason_.value_or(spec_.lost)));
  stops_.request(reason_.value_or(spec_.lost));
}

}  // namespace ddp::launch::supervise
