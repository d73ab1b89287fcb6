// Reading and writing plain file descriptors where no Asio stream fits: a blocking read as
// read(2) does it (an agent's stdin), a small file read whole (/proc, /sys), and a file opened
// for appending (a stacks file). Each
// call blocks as the underlying system call does; thread-safe (no shared state).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "launcher/os/process.hpp"

namespace ddp::launch::os {

// read(2): the bytes read (up to size), 0 at the end, -1 on an error with errno set (EINTR
// included: the caller decides whether to read again).
ssize_t read_some(int fd, char* buf, size_t size);

// The whole of a small file; "" when it cannot be read.
std::string read_text(const std::string& path);

// path opened for writing at its end, created (0644) if missing, close-on-exec; an invalid
// UniqueFd if it cannot be (errno says why).
UniqueFd open_append(const std::string& path);

}  // namespace ddp::launch::os
