#include "launcher/supervise/worker_pipes.hpp"

#include <unistd.h>

#include <utility>

#include <boost/asio/buffer.hpp>

#include "launcher/os/process.hpp"

namespace ddp::launch::supervise {

WorkerPipes::Reader::Reader(boost::asio::io_context& io, os::UniqueFd read_end, worker::WorkerStream s)
    : descriptor(io, read_end.release()), stream(std::move(s)) {}

WorkerPipes::Reader WorkerPipes::make_reader(boost::asio::io_context& io, os::Pipe& pipe,
                                             const worker::WorkerLaunch& launch, bool to_console, int console_fd,
                                             const std::string& log, worker::ConsoleBoard* board,
                                             std::shared_ptr<worker::DuplicateLog> duplicate) {
  os::UniqueFd file = log.empty() ? os::UniqueFd() : worker::open_log_file(log);
  const bool on_board = board && os::is_terminal(console_fd) && os::same_file(console_fd, board->fd());
  const int slot = 2 * launch.local_rank + (console_fd == STDERR_FILENO ? 1 : 0);
  return Reader(io, std::move(pipe.read_end),
                worker::WorkerStream(launch.prefix, to_console ? console_fd : -1, std::move(file),
                                     on_board ? board : nullptr, slot, std::move(duplicate)));
}

WorkerPipes::WorkerPipes(boost::asio::io_context& io, worker::WorkerLaunch& launch, worker::ConsoleBoard* board,
                         std::function<void()> on_data)
    : out_pipe_(os::make_pipe()),
      err_pipe_(os::make_pipe()),
      out_(make_reader(io, out_pipe_, launch, launch.stdout_to_console, STDOUT_FILENO, launch.stdout_log, board,
                       launch.stdout_duplicate)),
      err_(make_reader(io, err_pipe_, launch, launch.stderr_to_console, STDERR_FILENO, launch.stderr_log, board,
                       launch.stderr_duplicate)),
      on_data_(std::move(on_data)) {
  launch.spawn.stdout_fd = out_pipe_.write_end.get();
  launch.spawn.stderr_fd = err_pipe_.write_end.get();
}

void WorkerPipes::close_write_ends() {
  out_pipe_.write_end.reset();
  err_pipe_.write_end.reset();
}

void WorkerPipes::start_reading() {
  read(out_);
  read(err_);
}

bool WorkerPipes::open() const { return out_.open || err_.open; }

void WorkerPipes::cancel() {
  for (Reader* r : {&out_, &err_})
    if (r->open) r->descriptor.cancel();
}

void WorkerPipes::read(Reader& reader) {
  reader.descriptor.async_read_some(boost::asio::buffer(reader.buffer),
                                    [this, &reader](const boost::system::error_code& ec, size_t n) {
                                      bytes_read_ += n;
                                      if (n > 0) reader.stream.consume(std::string_view(reader.buffer.data(), n));
                                      if (on_data_) on_data_();
                                      if (ec) {
                                        reader.open = false;
                                        reader.stream.finish();
                                        return;
                                      }
                                      read(reader);
                                    });
}

}  // namespace ddp::launch::supervise
