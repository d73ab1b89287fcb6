

#include "contract/snapshot_file.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/os/durable_file.hpp"
#include "launcher/os/process.hpp"
#include "launcher/snapshot/snapshot_persister.hpp"
#include <chrono>
#include <condition_variable>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <mutex>
#include <optional>
#include <thread>
#include <unistd.h>
#include <vector>

namespace ddp::launch::snapshot {
namespace {

using Clock = std::chrono::steady_clock;

std::optional<ddp::snapshot::Snapshot> read_region(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  auto s = ddp::snapshot::read_settled_snapshot(fd);
  ::close(fd);
  return s;
}

bool said_by_finish(PersistReason why) { return why == PersistReason::kEnd || why == PersistReason::kStop; }

}  // namespace

struct SnapshotPersister::Impl {
  SnapshotPersistConfig config;
  report::EventLog* events;
  const std::string host = os::host_name();
  const long pid = static_cast<long>(::getpid());

  std::mutex mu;  // guards what follows up to the thread
  std::condition_variable cv;
  std::string source;
  std::optional<PersistReason> pending;
  bool stopping = false;
  std::vector<std::string> finish_lines;  // console lines for finish()'s caller
  std::thread thread;

  // The thread's own.
  std::optional<PersistedFile> last;
  bool warned = false;

  void loop();
  void persist(PersistReason why, const std::string& region);
  void say(PersistReason why, const std::string& text);
};

void SnapshotPersister::Impl::loop() {
  std::unique_lock<std::mutex> lock(mu);
  const bool timed = config.interval_s > 0;
  const auto interval = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(config.interval_s));
  Clock::time_point next = Clock::now() + interval;
  for (;;) {
    const auto ready = [&] { return pending.has_value() || stopping; };
    bool woken = true;
    if (timed) woken = cv.wait_until(lock, next, ready);
    else cv.wait(lock, ready);
    PersistReason why = PersistReason::kInterval;
    if (pending) {
      why = *pending;
      pending.reset();
    } else if (stopping) {
      return;
    } else if (!woken) {
      next = Clock::now() + interval;
    }
    const std::string region = source;
    lock.unlock();
    persist(why, region);
    lock.lock();
  }
}

// Console lines: from this thread for a failure (one write), else by finish()'s caller.
void SnapshotPersister::Impl::say(PersistReason why, const std::string& text) {
  if (!said_by_finish(why)) {
    console::write_all(STDERR_FILENO, "ddp-launch: " + text + "\n");
    return;
  }
  std::lock_guard<std::mutex> lock(mu);
  finish_lines.push_back(text);
}

void SnapshotPersister::Impl::persist(PersistReason why, const std::string& region) {
  if (region.empty()) return;
  const auto start = Clock::now();
  const std::optional<ddp::snapshot::Snapshot> snap = read_region(region);
  if (!snap) return;  // none yet, or the worker kept reusing the slot: the next persist
  std::error_code ec;
  const bool exists = std::filesystem::exists(config.dir + "/" + persisted_file_name(snap->step), ec);
  const PersistPlan plan = plan_persist(config.dir, snap->step, last, exists, host, pid);
  if (plan.action != PersistPlan::Action::kWrite) return;
  const std::string error = os::write_file_durably(plan.temp_path, plan.path, snap->payload);
  if (!error.empty()) {
    if (events)
      events->write("snapshot_persist_failed", {{"step", static_cast<long long>(snap->step)},
                                                {"path", plan.path},
                                                {"why", to_string(why)},
                                                {"error", error}});
    if (!warned)
      say(why, fmt::format("warning: cannot write the in-memory snapshot of step {} to {}: {}; training goes on, "
                           "without it on disk (check --snapshot-persist-dir)",
                           snap->step, config.dir, error));
    warned = true;
    return;
  }
  if (!plan.remove.empty()) ::unlink(plan.remove.c_str());
  last = PersistedFile{snap->step, plan.path};
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (events)
    events->write("snapshot_persisted", {{"step", static_cast<long long>(snap->step)},
                                         {"path", plan.path},
                                         {"bytes", static_cast<long long>(snap->payload.size())},
                                         {"seconds", seconds},
                                         {"why", to_string(why)}});
  if (why != PersistReason::kInterval) say(why, persist_notice(snap->step, plan.path, snap->payload.size(), seconds));
}

SnapshotPersister::SnapshotPersister(SnapshotPersistConfig config, report::EventLog* events)
    : impl_(std::make_unique<Impl>()) {
  impl_->config = std::move(config);
  impl_->events = events;
  impl_->thread = std::thread([impl = impl_.get()] { impl->loop(); });
}

SnapshotPersister::~SnapshotPersister() { finish(); }

void SnapshotPersister::set_source(const std::string& region_path) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->source = region_path;
}

void SnapshotPersister::request(PersistReason why) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopping) return;
    // A later request replaces an earlier one not yet started (the newest snapshot is read
    // either way); the end or a stop outranks a failure.
    if (!impl_->pending || !said_by_finish(*impl_->pending)) impl_->pending = why;
  }
  impl_->cv.notify_one();
}

void SnapshotPersister::finish() {
  if (!impl_->thread.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_one();
  impl_->thread.join();
  for (const std::string& line : impl_->finish_lines) console::launcher_notice(line);
  impl_->finish_lines.clear();
}

}  // namespace ddp::launch::snapshot
