// The progress feed's writer: one process-wide mapping of the record, updated under a mutex
// (uncontended: no system call) so that several threads (autograd hooks, the training loop)
// keep `updates` monotonic. Fields first, then a release fence, then `updates`, as
// python/ddp_progress.py does; the launcher only compares `updates` between reads.
#include "runtime/src/process/progress_feed.hpp"

#include "ddp/progress.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <ctime>
#include <mutex>

namespace ddp::detail::feed {
namespace {

using progress::Record;

struct State {
  std::atomic<Record*> record{nullptr};
  std::mutex mutex;  // guards everything below and the writes to *record
  bool tried = false;
  uint64_t updates = 0, step = 0, seq_entered = 0, seq_completed = 0, saving_ns = 0;
  uint32_t paused = 0;
};

State& state() {
  static State s;
  return s;
}

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // vDSO: no system call
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Stamps write_time (and *time_field), then publishes the change through `updates`.
void touch(State& s, Record* r, uint64_t* time_field) {
  const uint64_t now = now_ns();
  if (time_field) *time_field = now;
  r->write_time_ns = now;
  std::atomic_thread_fence(std::memory_order_release);
  r->updates = ++s.updates;
}

Record* map_record(const char* path) {
  const int fd = ::open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st {};
  void* p = MAP_FAILED;
  if (::fstat(fd, &st) == 0 &&
      (st.st_size >= static_cast<off_t>(progress::kRecordSize) || ::ftruncate(fd, progress::kRecordSize) == 0)) {
    p = ::mmap(nullptr, progress::kRecordSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  ::close(fd);
  return p == MAP_FAILED ? nullptr : static_cast<Record*>(p);
}

}  // namespace

void open_from_env() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.tried) return;
  s.tried = true;
  const char* path = std::getenv(progress::kEnvVar);
  if (!path || !*path) return;
  Record* r = map_record(path);
  if (!r) return;  // not under a launcher that watches: stay a no-op
  r->magic = progress::kMagic;
  r->version = progress::kVersion;
  touch(s, r, nullptr);
  s.record.store(r, std::memory_order_release);
}

void disable_in_child() {
  State& s = state();
  s.record.store(nullptr, std::memory_order_release);  // no lock: another thread may have held it at fork()
  s.tried = true;
}

bool enabled() { return state().record.load(std::memory_order_acquire) != nullptr; }

uint64_t enter(progress::Op op, uint64_t numel, progress::DType dtype, uint32_t group) {
  State& s = state();
  Record* r = s.record.load(std::memory_order_acquire);
  if (!r) return 0;
  std::lock_guard<std::mutex> lock(s.mutex);
  r->seq_entered = ++s.seq_entered;
  r->numel = numel;
  r->op = static_cast<uint32_t>(op);
  r->dtype = static_cast<uint32_t>(dtype);
  r->group = group;
  touch(s, r, &r->collective_time_ns);
  return s.seq_entered;
}

void complete(uint64_t seq) {
  State& s = state();
  Record* r = s.record.load(std::memory_order_acquire);
  if (!r || seq == 0) return;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (seq <= s.seq_completed) return;
  r->seq_completed = s.seq_completed = seq;
  touch(s, r, &r->collective_time_ns);
}

uint64_t last_entered() {
  State& s = state();
  if (!s.record.load(std::memory_order_acquire)) return 0;
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.seq_entered;
}

void step() {
  State& s = state();
  Record* r = s.record.load(std::memory_order_acquire);
  if (!r) return;
  std::lock_guard<std::mutex> lock(s.mutex);
  r->step = ++s.step;
  touch(s, r, &r->step_time_ns);
}

// Stamps one of the record's phase times (joined, restored) with now.
void stamp(uint64_t Record::*field) {
  State& s = state();
  Record* r = s.record.load(std::memory_order_acquire);
  if (!r) return;
  std::lock_guard<std::mutex> lock(s.mutex);
  touch(s, r, &(r->*field));
}

void joined() { stamp(&Record::joined_time_ns); }

void restored(std::optional<int64_t> step) {
  State& s = state();
  Record* r = s.record.load(std::memory_order_acquire);
  if (!r) return;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (step && *step >= 0) {
    s.step = static_cast<uint64_t>(*step);  // the next DDP step is the restored one's + 1
    r->restored_next_step = s.step + 1;
  }
  touch(s, r, &r->restored_time_ns);
}

void saved(std::chrono::nanoseconds blocked) {
  State& s = state();
  Record* r = s.record.load(std::memory_order_acquire);
  if (!r || blocked.count() <= 0) return;
  std::lock_guard<std::mutex> lock(s.mutex);
  s.saving_ns += static_cast<uint64_t>(blocked.count());
  r->saving_ms = static_cast<uint32_t>(s.saving_ns / 1000000);  // wraps after 49 days of saving
}

void pause_begin(uint64_t timeout_ns) {
  State& s = state();
  Record* r = s.record.load(std::memory_order_acquire);
  if (!r) return;
  std::lock_guard<std::mutex> lock(s.mutex);
  r->paused = ++s.paused;
  r->pause_deadline_ns = timeout_ns == 0 ? 0 : now_ns() + timeout_ns;
  touch(s, r, nullptr);
}

void pause_end() {
  State& s = state();
  Record* r = s.record.load(std::memory_order_acquire);
  if (!r) return;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.paused == 0) return;
  r->paused = --s.paused;
  if (s.paused == 0) r->pause_deadline_ns = 0;
  touch(s, r, nullptr);
}

}  // namespace ddp::detail::feed

namespace ddp {

PauseProgress::PauseProgress(std::chrono::milliseconds timeout) {
  const auto ms = timeout.count() > 0 ? static_cast<uint64_t>(timeout.count()) : 0;
  detail::feed::pause_begin(ms * 1000000ull);
}

PauseProgress::~PauseProgress() { detail::feed::pause_end(); }

bool progress_feed_enabled() { return detail::feed::enabled(); }

}  // namespace ddp
