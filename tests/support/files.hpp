// Files for tests: temporary directories removed on scope exit (kept when DDP_TEST_KEEP is
// set, for debugging), whole-file read/write, lines, and this binary's own path (for tests
// that re-execute it as a helper). No torch, no launcher code; blocking; not thread-safe.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

namespace ddp::test {

// A fresh directory under /tmp (mkdtemp); throws std::runtime_error if none can be made.
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
int count_matching(const std::string& text, const std::string& needle);
std::string self_exe();  // the running binary (/proc/self/exe resolved)

// What fn() writes to this process's stderr (through `file`, which is left behind).
template <class Fn>
std::string stderr_of(const std::string& file, Fn fn) {
  std::fflush(stderr);
  const int saved = ::dup(STDERR_FILENO);
  FILE* f = std::fopen(file.c_str(), "w");
  ::dup2(::fileno(f), STDERR_FILENO);
  fn();
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  std::fclose(f);
  return read_file(file);
}

}  // namespace ddp::test
