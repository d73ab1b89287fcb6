#include "launcher/supervise/stop_requests.hpp"

#include <memory>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

namespace ddp::launch::supervise {

void StopRequests::request(std::string reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!reason_) reason_ = std::move(reason);
  post_locked();
}

void StopRequests::deliver_to(boost::asio::io_context& loop, Handler handler) {
  std::lock_guard<std::mutex> lock(mutex_);
  loop_ = &loop;
  handler_ = std::make_shared<Handler>(std::move(handler));
  post_locked();
}

void StopRequests::stop_delivering() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (handler_) *handler_ = nullptr;
  handler_.reset();
  loop_ = nullptr;
}

void StopRequests::post_locked() {
  if (!loop_ || !handler_ || !reason_) return;
  boost::asio::post(*loop_, [handler = handler_, reason = *reason_] {
    if (*handler) (*handler)(reason);
  });
  reason_.reset();  // delivered once; a later request is a new one
}

}  // namespace ddp::launch::supervise
