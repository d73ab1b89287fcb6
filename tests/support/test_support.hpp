// Test helpers: run a program (the real ddp-launch, usually) with a timeout and capture
// its exit code and output; start one in the background to signal it; temporary
// directories; wait for a condition. Blocking; for tests only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ddp::test {

struct RunResult {
  int exit_code = -1;  // 128+N when killed by signal N; -1 if it timed out (then killed)
  std::string out;
  std::string err;
  double seconds = 0;
};

using EnvOverrides = std::map<std::string, std::string>;  // value "\x01" removes the variable
inline const std::string kUnset = "\x01";

// Runs argv with the test's environment plus overrides; kills it after timeout.
RunResult run(const std::vector<std::string>& argv, const EnvOverrides& env = {},
              std::chrono::seconds timeout = std::chrono::seconds(120));

// ddp-launch with these arguments.
RunResult launch(const std::vector<std::string>& args, const EnvOverrides& env = {},
                 std::chrono::seconds timeout = std::chrono::seconds(120));
std::string launcher_path();

// A program running in the background (its own session); output goes to files.
class Background {
 public:
  Background(const std::vector<std::string>& argv, const EnvOverrides& env = {});
  ~Background();  // kills it if still running
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;
  pid_t pid() const { return pid_; }
  void signal(int signo) const;
  std::string err_so_far() const;  // its stderr up to now
  RunResult wait(std::chrono::seconds timeout = std::chrono::seconds(60));  // then reads output

 private:
  pid_t pid_ = -1;
  bool done_ = false;
  std::string out_path_, err_path_;
};

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string read_file(const std::string& path);  // "" if missing
void write_file(const std::string& path, const std::string& text);
bool file_exists(const std::string& path);
std::vector<std::string> lines_of(const std::string& text);
bool process_alive(pid_t pid);  // exists and is not a zombie
// Polls pred every 20 ms until true or timeout; returns pred's last value.
bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout);
int count_matching(const std::string& text, const std::string& needle);

}  // namespace ddp::test
