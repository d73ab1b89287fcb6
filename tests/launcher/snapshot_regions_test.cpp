// The launcher's snapshot regions with real processes (docs/snapshots.md): one private file
// per local rank, the same across restarts with its content kept, removed at exit (success,
// failure, a stop signal), a SIGKILLed launcher's files swept by the next launcher, no
// region (one notice) where the folder cannot hold one, and python/ddp_snapshot.py writing and
// reading the same format as contract/snapshot_file.hpp. DDP_LAUNCH_SNAPSHOT_DIR points each
// case at its own folder.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>

#include "contract/snapshot_file.hpp"
#include "tests/support/test_support.hpp"

using namespace ddp::test;
using namespace std::chrono_literals;

namespace {

size_t files_in(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

TEST_CASE("snapshot regions: one per local rank, kept with its content across a restart, removed at exit") {
  TempDir shm, out;
  // Attempt 0: each rank writes its region, then rank 1 fails (once rank 0 wrote); attempt 1:
  // each checks its region's content.
  const std::string script =
      "f=$DDP_LAUNCH_SNAPSHOT_FILE; [ -n \"$f\" ] || exit 9; "
      "echo \"$f\" >> " +
      out.path() +
      "/paths.$LOCAL_RANK; "
      "if [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then printf \"state of $LOCAL_RANK\" > \"$f\"; "
      "touch " +
      out.path() +
      "/written.$LOCAL_RANK; "
      "if [ $LOCAL_RANK = 1 ]; then while [ ! -e " +
      out.path() +
      "/written.0 ]; do sleep 0.05; done; exit 3; fi; "
      "sleep 60; fi; "
      "[ \"$(cat \"$f\")\" = \"state of $LOCAL_RANK\" ] || exit 8; stat -c %a \"$f\" >> " +
      out.path() + "/modes";
  auto r = launch({"--nproc-per-node=2", "--max-restarts=1", "--no-python", "sh", "-c", script},
                  {{"DDP_LAUNCH_SNAPSHOT_DIR", shm.path()}}, 120s);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (int local = 0; local < 2; ++local) {
    const auto paths = lines_of(read_file(out / ("paths." + std::to_string(local))));
    REQUIRE(paths.size() == 2);
    CHECK(paths[0] == paths[1]);  // the same region for the restart
    CHECK(paths[0].rfind(shm.path() + "/ddp-launch-snapshot-", 0) == 0);
  }
  CHECK(read_file(out / "paths.0") != read_file(out / "paths.1"));
  CHECK(read_file(out / "modes") == "600\n600\n");
  CHECK(files_in(shm.path()) == 0);  // removed at exit
}

TEST_CASE("snapshot regions: removed after a failure and after a stop signal") {
  TempDir shm;
  auto failed =
      launch({"--nproc-per-node=2", "--no-python", "sh", "-c", "[ -f \"$DDP_LAUNCH_SNAPSHOT_FILE\" ] && exit 4"},
             {{"DDP_LAUNCH_SNAPSHOT_DIR", shm.path()}}, 60s);
  CHECK(failed.exit_code == 4);
  CHECK(files_in(shm.path()) == 0);

  Background job({launcher_path(), "--nproc-per-node=2", "--no-python", "sh", "-c", "sleep 60"},
                 {{"DDP_LAUNCH_SNAPSHOT_DIR", shm.path()}});
  REQUIRE(wait_until([&] { return files_in(shm.path()) == 2; }, 30s));
  job.signal(SIGTERM);
  auto r = job.wait(60s);
  CHECK(r.exit_code == 128 + SIGTERM);
  CHECK(files_in(shm.path()) == 0);
}

TEST_CASE("snapshot regions: a SIGKILLed launcher's are swept by the next launcher") {
  TempDir shm;
  {
    Background job({launcher_path(), "--nproc-per-node=2", "--no-python", "sh", "-c", "sleep 60"},
                   {{"DDP_LAUNCH_SNAPSHOT_DIR", shm.path()}});
    REQUIRE(wait_until([&] { return files_in(shm.path()) == 2; }, 30s));
    job.signal(SIGKILL);
    job.wait(60s);
  }
  CHECK(files_in(shm.path()) == 2);  // nobody removed them
  auto r = launch({"--nproc-per-node=1", "--no-python", "sh", "-c", "ls $(dirname $DDP_LAUNCH_SNAPSHOT_FILE) | wc -l"},
                  {{"DDP_LAUNCH_SNAPSHOT_DIR", shm.path()}}, 60s);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("1"));  // only its own
  CHECK(files_in(shm.path()) == 0);
}

TEST_CASE("snapshot regions: a folder that cannot hold them: one notice, workers without the variable") {
  TempDir dir;
  auto r = launch({"--nproc-per-node=2", "--no-python", "sh", "-c", "[ -z \"$DDP_LAUNCH_SNAPSHOT_FILE\" ]"},
                  {{"DDP_LAUNCH_SNAPSHOT_DIR", dir / "missing"}}, 60s);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(count_matching(r.err, "in-memory snapshots are off") == 1);
}

TEST_CASE("snapshot regions: python/ddp_snapshot.py and contract/snapshot_file.hpp read each other's") {
  TempDir dir;
  const std::string from_python = dir / "from_python", from_cpp = dir / "from_cpp";
  write_file(from_python, "");
  const std::string python_dir = std::string(DDP_SOURCE_DIR) + "/python";
  auto wrote = run({"python3", "-c",
                    "import sys; sys.path.insert(0, sys.argv[1]); import ddp_snapshot as s; "
                    "s.save_bytes(3, b'three'); s.save_bytes(4, b'four' * 5000)",
                    python_dir},
                   {{"DDP_LAUNCH_SNAPSHOT_FILE", from_python}}, 60s);
  REQUIRE(wrote.exit_code == 0);
  const auto read = ddp::snapshot::read_newest_snapshot(from_python);
  REQUIRE(read);
  CHECK(read->step == 4);
  std::string fours;
  for (int i = 0; i < 5000; ++i) fours += "four";
  CHECK(read->payload == fours);

  {
    const int fd = ::open(from_cpp.c_str(), O_RDWR | O_CREAT, 0600);
    REQUIRE(fd >= 0);
    const std::string a = "seven", b(100000, 'q');
    CHECK(ddp::snapshot::write_snapshot(fd, 7, a.data(), a.size()).error == 0);
    CHECK(ddp::snapshot::write_snapshot(fd, 8, b.data(), b.size()).error == 0);
    ::close(fd);
  }
  auto loaded = run({"python3", "-c",
                     "import sys; sys.path.insert(0, sys.argv[1]); import ddp_snapshot as s; "
                     "n = s.load_bytes(); o = s.load_bytes(7); print(n[0], len(n[1]), set(n[1]), o)",
                     python_dir},
                    {{"DDP_LAUNCH_SNAPSHOT_FILE", from_cpp}}, 60s);
  INFO(loaded.err);
  REQUIRE(loaded.exit_code == 0);
  CHECK(loaded.out == "8 100000 {113} (7, b'seven')\n");
}
