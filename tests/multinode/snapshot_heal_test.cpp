// A lost node's replacement is healed from the survivor's in-memory snapshot (docs/snapshots.md):
// two launchers on loopback (c10d, --nnodes=2, one `train` worker each, --snapshot-every 1)
// resume from an older checkpoint on disk; the follower's launcher is SIGKILLed mid-training and
// a new launcher takes its place. The replacement round must restore from memory (the new rank
// receives the survivor's snapshot) and never open a checkpoint file: inotify on the checkpoint
// directory, watched from before the job, sees round 0's read and nothing after the kill.
// Hidden ([.heal]): CTest runs it with the train binary in DDP_TRAIN (runtime builds only).
#include <catch2/catch.hpp>

#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "tests/support/test_support.hpp"

using namespace ddp::test;
using namespace std::chrono_literals;

namespace {

struct DirEvent {
  uint32_t mask = 0;
  std::string name;
};

// Everything the watch on `fd` has queued (non-blocking).
std::vector<DirEvent> drain(int fd) {
  std::vector<DirEvent> out;
  alignas(inotify_event) char buf[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return out;
    for (ssize_t at = 0; at < n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
      out.push_back({e->mask, e->len ? std::string(e->name) : std::string()});
      at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
    }
  }
}

// A checkpoint file (not a temporary one being written) opened or read.
bool reads_checkpoint(const DirEvent& e) {
  return e.name.rfind("ckpt_", 0) == 0 && e.name.find(".tmp.") == std::string::npos;
}

std::string describe(const std::vector<DirEvent>& events) {
  std::string out;
  for (const auto& e : events)
    out += std::string(e.mask & IN_OPEN ? "open " : "access ") + (e.name.empty() ? "<dir>" : e.name) + "\n";
  return out;
}

// The newest step rank `rank` logged in `attempt` (train --step-times: "<attempt> step <n> <time>").
long last_step(const std::string& times_dir, int rank, int attempt) {
  long step = -1;
  const std::string path = times_dir + "/rank" + std::to_string(rank) + ".log";
  if (!file_exists(path)) return step;
  for (const auto& line : lines_of(read_file(path))) {
    std::smatch m;
    static const std::regex kStep(R"(^(\d+) step (\d+) )");
    if (std::regex_search(line, m, kStep) && std::stoi(m[1]) == attempt) step = std::stol(m[2]);
  }
  return step;
}

}  // namespace

namespace {

// The replacement is a new launcher started after the kill, or (spare) a hot spare that waited
// since round 0 and takes the seat by itself.
void heal_after_kill(bool spare) {
  const char* train = std::getenv("DDP_TRAIN");
  REQUIRE(train != nullptr);
  TempDir dir;
  const std::string ckpt = dir / "ckpt", times = dir / "times";
  std::filesystem::create_directories(times);
  const EnvOverrides env{{"OMP_NUM_THREADS", "1"}, {"GLOO_SOCKET_IFNAME", "lo"}};
  // 2048 samples, batch 16: 128 steps an epoch on one worker, 64 on two. No step checkpoints.
  const std::vector<std::string> data = {
      "--train-samples",       "2048",    "--val-samples",      "256", "--batch-size", "16",
      "--checkpoint-interval", "1000000", "--keep-checkpoints", "100", "--progress",   "plain",
      "--log-every",           "1000",    "--checkpoint-dir",   ckpt};

  // The older checkpoint: one epoch on one worker (ckpt_000000128.pt).
  std::vector<std::string> seed = {"--nproc-per-node=1", train, "--epochs", "1"};
  seed.insert(seed.end(), data.begin(), data.end());
  const RunResult seeded = launch(seed, env, 120s);
  INFO(seeded.out << seeded.err);
  REQUIRE(seeded.exit_code == 0);
  const std::string old_checkpoint = "ckpt_000000128.pt";
  REQUIRE(file_exists(ckpt + "/" + old_checkpoint));

  const int watch = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  REQUIRE(watch >= 0);
  REQUIRE(::inotify_add_watch(watch, ckpt.c_str(), IN_OPEN | IN_ACCESS) >= 0);

  const int port = free_port();
  auto node = [&](int node_rank, const std::string& shm) {
    std::filesystem::create_directories(dir / shm);
    std::vector<std::string> argv = {launcher_path(),
                                     "--nnodes=2",
                                     "--rdzv-backend=c10d",
                                     "--rdzv-endpoint=127.0.0.1:" + std::to_string(port),
                                     "--rdzv-id=heal",
                                     "--node-rank=" + std::to_string(node_rank),  // -1: none (spare)
                                     "--nproc-per-node=1",
                                     "--max-restarts=1",
                                     "--rdzv-conf=join_timeout=60,is_host=" + std::string(node_rank == 0 ? "1" : "0"),
                                     train,
                                     "--epochs",
                                     "4",
                                     "--snapshot-every",
                                     "1",
                                     "--metrics",
                                     dir / "metrics.csv",
                                     "--step-times",
                                     times};
    argv.insert(argv.end(), data.begin(), data.end());
    if (node_rank < 0) argv.erase(argv.begin() + 5);  // a spare takes whichever seat is free
    EnvOverrides node_env = env;
    node_env["DDP_LAUNCH_SNAPSHOT_DIR"] = dir / shm;  // each node its own /dev/shm
    return std::make_unique<Background>(argv, node_env);
  };
  auto survivor = node(0, "shm0");
  auto victim = node(1, "shm1");
  // Round 0 resumed from the checkpoint (step 128) and trains epochs 2-4 (steps 129..320).
  REQUIRE(wait_until([&] { return last_step(times, 1, 0) >= 140; }, 120s));
  const std::vector<DirEvent> before = drain(watch);
  INFO("round 0's checkpoint directory events:\n" << describe(before));
  CHECK(std::any_of(before.begin(), before.end(), [&](const DirEvent& e) { return e.name == old_checkpoint; }));
  std::unique_ptr<Background> replacement;
  if (spare) {
    replacement = node(-1, "shm2");
    REQUIRE(
        wait_until([&] { return replacement->err_so_far().find("waits as a hot spare") != std::string::npos; }, 60s));
  }

  victim->signal(SIGKILL);
  victim->wait(30s);
  const long killed_at = last_step(times, 1, 0);
  REQUIRE(
      wait_until([&] { return survivor->err_so_far().find("restarting on every node") != std::string::npos; }, 60s));
  if (!spare) replacement = node(1, "shm2");
  const RunResult a = survivor->wait(120s);
  const RunResult c = replacement->wait(60s);
  const std::vector<DirEvent> after = drain(watch);
  ::close(watch);
  INFO("survivor:\n" << a.out << a.err << "\nreplacement:\n" << c.out << c.err);
  INFO("checkpoint directory events after the kill:\n" << describe(after));
  REQUIRE(a.exit_code == 0);
  REQUIRE(c.exit_code == 0);
  if (spare) CHECK_THAT(c.err, Catch::Contains("round 1: node 1 of 2"));

  std::smatch m;
  const std::regex healed(
      R"(\[rank0\]: train: resumed from the in-memory snapshot of step (\d+) \(epoch \d+, restart 1; rank 1 healed from rank 0\))");
  REQUIRE(std::regex_search(a.out, m, healed));
  const long step = std::stol(m[1]);
  // The survivor's newest: the last step both ranks did (one less if its copy was torn by the stop).
  CHECK(step >= killed_at - 1);
  CHECK(step <= killed_at + 1);
  CHECK_THAT(c.out + c.err, Catch::Contains("ddp::Snapshot: rank 1 received the snapshot of step " +
                                            std::to_string(step) + " from rank 0"));
  // Round 0 read the disk (no snapshot anywhere yet); the replacement round did not.
  const std::string a_all = a.out + a.err;
  CHECK_THAT(a_all, Catch::Contains("ddp::Snapshot: resuming from " + ckpt + "/" + old_checkpoint) &&
                        Catch::Contains(": no rank holds an in-memory snapshot"));
  CHECK(a_all.find("no rank holds an in-memory snapshot") == a_all.rfind("no rank holds an in-memory snapshot"));
  CHECK_THAT(a.out, Catch::Contains("train: done: ") && Catch::Contains("(320 steps) on 2 worker(s)"));
  for (const auto& e : after) {
    CHECK_FALSE(reads_checkpoint(e));
    CHECK_FALSE(((e.mask & IN_ACCESS) && !(e.mask & IN_ISDIR)));  // no file in it was read
  }
}
}  // namespace

TEST_CASE("a SIGKILLed node's replacement is healed from the survivor's snapshot, no checkpoint read", "[.heal]") {
  heal_after_kill(false);
}

TEST_CASE("a hot spare takes a SIGKILLed node's seat, healed from the survivor's snapshot, no checkpoint read",
          "[.spare_heal]") {
  heal_after_kill(true);
}
