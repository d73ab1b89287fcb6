// This process's own environment, working folder and executable: the POSIX calls the
// application files need (getenv/setenv, getcwd/chdir, /proc/self/exe), named. setenv is not
// thread-safe: call set_env before starting threads. Nothing here blocks.
#pragma once

#include <optional>
#include <string>

namespace ddp::launch::os {

// The variable's value; nullopt when unset.
std::optional<std::string> env_value(const std::string& name);
// Sets (or replaces) a variable of this process's environment, for what it starts later.
void set_env(const std::string& name, const std::string& value);

// The working folder; "" if it cannot be read (removed, or too long).
std::string current_dir();
// Makes path the working folder; false if it cannot (errno says why).
bool change_dir(const std::string& path);

// The absolute path of this process's executable (/proc/self/exe). Throws LaunchError(120).
std::string executable_path();

}  // namespace ddp::launch::os
