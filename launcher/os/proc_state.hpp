// A process's scheduling state as /proc shows it, for the D-state check (torchrun 2.15's
// TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT): the state letter of /proc/PID/stat ('R', 'S',
// 'D', 'Z', ...), its parent, and where in the kernel it sleeps (/proc/PID/stack where readable, as root;
// else /proc/PID/wchan). The parser is pure; the readers read one small file each and never throw.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace ddp::launch::os {

// The state letter of a /proc/PID/stat text: the first field after the last ')' (the command
// name may hold spaces and parentheses); nullopt when the text is not one.
std::optional<char> parse_proc_state(std::string_view stat_text);
// The parent pid of a /proc/PID/stat text (the field after the state).
std::optional<pid_t> parse_proc_parent(std::string_view stat_text);
// pid's state and parent now; nullopt when it is gone or unreadable.
std::optional<char> proc_state(pid_t pid);
std::optional<pid_t> proc_parent(pid_t pid);
// Where pid sleeps in the kernel: the function names of its kernel stack, innermost first,
// joined by " <- " (at most max_frames), else its wait channel's name; "" when neither reads.
std::string kernel_stack(pid_t pid, size_t max_frames = 8);

}  // namespace ddp::launch::os
