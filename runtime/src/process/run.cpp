// ddp::run (uncaught exception → error file + exit code 1), the @record error file writer and
// the rank-prefixed log lines.
#include "ddp/run.hpp"

#include <cxxabi.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <fstream>
#include <nlohmann/json.hpp>
#include <typeinfo>

#include "ddp/process_group.hpp"
#include "runtime/src/torch_compat.hpp"

namespace ddp {
namespace {

std::string demangle(const char* name) {
  int status = 0;
  char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string result = status == 0 && out ? out : name;
  std::free(out);
  return result;
}

int current_rank() {
  if (is_initialized()) return get_rank();
  const char* rank = std::getenv("RANK");
  return rank ? std::atoi(rank) : 0;
}

std::string callstack_text(const std::string& type, const std::string& detail) {
  return "C++ exception " + type + " escaped the worker's main (caught by ddp::run; C++ keeps no throw-site stack)" +
         (detail.empty() ? "" : "\n" + detail);
}

void record(const std::string& type, const std::string& message, const std::string& detail) {
  LogLine() << "error: " << type << ": " << message;
  const char* path = std::getenv("TORCHELASTIC_ERROR_FILE");
  if (!path || !*path) return;
  const auto now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  nlohmann::json j;
  j["message"]["message"] = type + ": " + message;
  j["message"]["extraInfo"]["py_callstack"] = callstack_text(type, detail);
  j["message"]["extraInfo"]["timestamp"] = std::to_string(now.count());
  std::ofstream out(path, std::ios::trunc);
  out << j.dump() << '\n';
}

// An exception escaping another thread (or a noexcept function) ends in std::terminate:
// record it too, then abort as the default handler would.
[[noreturn]] void on_terminate() {
  static std::atomic<bool> entered{false};
  if (entered.exchange(true)) std::abort();
  std::string type = "std::terminate";
  std::string message = "terminate called without an active exception";
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      type = demangle(typeid(ex).name());
      message = ex.what();
    } catch (...) {
      message = "a non-std::exception";
    }
  }
  record(type, message + " (escaped a thread or a noexcept function: std::terminate)", "");
  std::abort();
}

}  // namespace

void write_error_file(const std::string& type, const std::string& message) { record(type, message, ""); }

namespace detail {
int run_main(int argc, char** argv, const std::function<int(int, char**)>& main_fn) {
  std::set_terminate(on_terminate);
  try {
    return main_fn(argc, argv);
  } catch (const c10::Error& e) {
    record(demangle(typeid(e).name()), e.what_without_backtrace(), e.what());
  } catch (const std::exception& e) {
    record(demangle(typeid(e).name()), e.what(), "");
  } catch (...) {
    record("unknown", "a non-std::exception was thrown", "");
  }
  std::fflush(nullptr);
  return 1;
}
}  // namespace detail

LogLine::~LogLine() {
  if (!enabled_) return;
  std::string line = "[rank " + std::to_string(current_rank()) + "] " + stream_.str() + "\n";
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

LogLine log() { return LogLine(true); }
LogLine log_rank0() { return LogLine(current_rank() == 0); }

}  // namespace ddp
