// The launcher writing the in-memory snapshot to disk (docs/snapshots.md, "Written to disk")
// with real processes: workers (python3, standard library) fill their regions with
// python/ddp_snapshot.py's save_bytes; the launcher persists local rank 0's newest one to
// --snapshot-persist-dir every interval, when a worker fails, at the end and on SIGTERM,
// keeps only its newest file, and an unwritable folder costs one warning, not the job.
#include <catch2/catch.hpp>

#include <signal.h>

#include <filesystem>

#include "tests/launcher/run_events.hpp"
#include "tests/support/test_support.hpp"

using namespace ddp::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

const std::string kPythonDir = std::string(DDP_SOURCE_DIR) + "/python";

// A python3 -c program with ddp_snapshot imported as s; `body` follows.
std::vector<std::string> python_worker(const std::string& body) {
  return {"--no-python", "python3", "-c",
          "import os, sys, time; sys.path.insert(0, '" + kPythonDir + "'); import ddp_snapshot as s\n" + body};
}

std::vector<std::string> with(std::vector<std::string> flags, const std::vector<std::string>& worker) {
  flags.insert(flags.end(), worker.begin(), worker.end());
  return flags;
}

std::string ckpt_name(int step) {
  char name[32];
  std::snprintf(name, sizeof name, "ckpt_%09d.pt", step);
  return name;
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// (why, step) of each snapshot_persisted event, in order.
std::vector<std::pair<std::string, int>> persists(const std::string& log_dir) {
  std::vector<std::pair<std::string, int>> out;
  for (const auto& e : run_events(log_dir))
    if (e["event"] == "snapshot_persisted") out.emplace_back(e["why"].get<std::string>(), e["step"].get<int>());
  return out;
}

}  // namespace

TEST_CASE("snapshot persist: every interval while the workers run, the newest file only, the slot's payload") {
  TempDir shm, logs, out;
  const std::string dir = out / "persist";  // created by the launcher
  // Rank 0 saves a step every 20 ms until the launcher wrote two files of its (the first is
  // removed when the second is written), then checks the file it sees holds that step's payload.
  const std::string body =
      "d = sys.argv[1]\n"
      "if os.environ['LOCAL_RANK'] != '0': sys.exit(0)\n"
      "seen = set()\n"
      "for step in range(1, 100000):\n"
      "    s.save_bytes(step, b'payload of step %d ' % step * 1000)\n"
      "    for f in os.listdir(d):\n"
      "        if f.startswith('ckpt_'):\n"
      "            n = int(f[5:-3]); seen.add(n)\n"
      "            try: data = open(os.path.join(d, f), 'rb').read()\n"
      "            except FileNotFoundError: continue  # replaced by the next one meanwhile\n"
      "            assert data == b'payload of step %d ' % n * 1000, f\n"
      "    if len(seen) >= 2: break\n"
      "    time.sleep(0.02)\n"
      "print('saw', len(seen), 'files')\n";
  auto worker = python_worker(body);
  worker.push_back(dir);
  auto r = launch(with({"--nproc-per-node=2", "--log-dir", logs.path(), "--snapshot-persist-dir", dir,
                        "--snapshot-persist-interval=0.2"},
                       worker),
                  {{"DDP_LAUNCH_SNAPSHOT_DIR", shm.path()}}, 120s);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("saw 2 files"));
  const auto events = persists(logs.path());
  REQUIRE(events.size() >= 2);
  CHECK(events[0].first == "interval");
  const auto files = names_in(dir);
  REQUIRE(files.size() == 1);  // only the newest, no temporary left
  const int step = std::stoi(files[0].substr(5, 9));
  CHECK(files[0] == ckpt_name(step));
  CHECK(events.back().second == step);
  std::string expected;
  for (int i = 0; i < 1000; ++i) expected += "payload of step " + std::to_string(step) + " ";
  CHECK(read_file(dir + "/" + files[0]) == expected);
}

TEST_CASE("snapshot persist: a worker failure (in the background, the restart goes on) and the job's end") {
  TempDir shm, logs, out;
  const std::string dir = out / "persist";
  // Attempt 0: rank 0 saves step 5, rank 1 then fails. Attempt 1: rank 0 waits for the file of
  // step 5 (written after the failure while this attempt runs), saves step 6, and the job ends.
  const std::string body =
      "d, marker = sys.argv[1], sys.argv[2]\n"
      "rank, attempt = os.environ['LOCAL_RANK'], os.environ['TORCHELASTIC_RESTART_COUNT']\n"
      "if attempt == '0':\n"
      "    if rank == '0': s.save_bytes(5, b'five'); open(marker, 'w').close(); time.sleep(60)\n"
      "    while not os.path.exists(marker): time.sleep(0.02)\n"
      "    sys.exit(3)\n"
      "if rank == '0':\n"
      "    while not os.path.exists(os.path.join(d, 'ckpt_000000005.pt')): time.sleep(0.02)\n"
      "    s.save_bytes(6, b'six')\n";
  auto worker = python_worker(body);
  worker.insert(worker.end(), {dir, out / "saved"});
  auto r = launch(with({"--nproc-per-node=2", "--max-restarts=1", "--log-dir", logs.path(), "--snapshot-persist-dir",
                        dir, "--snapshot-persist-interval=0"},
                       worker),
                  {{"DDP_LAUNCH_SNAPSHOT_DIR", shm.path()}}, 120s);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(persists(logs.path()) == std::vector<std::pair<std::string, int>>{{"failure", 5}, {"end", 6}});
  CHECK(names_in(dir) == std::vector<std::string>{"ckpt_000000006.pt"});  // step 5's was ours: removed
  CHECK(read_file(dir + "/ckpt_000000006.pt") == "six");
  CHECK(count_matching(r.err,
                       "ddp-launch: wrote the in-memory snapshot of step 5 to " + dir + "/ckpt_000000005.pt (") == 1);
  CHECK(count_matching(r.err,
                       "ddp-launch: wrote the in-memory snapshot of step 6 to " + dir + "/ckpt_000000006.pt (") == 1);
  CHECK(names_in(shm.path()).empty());  // the regions went after the end's persist
}

TEST_CASE("snapshot persist: a final failure, and nothing to persist without a snapshot") {
  TempDir shm, out;
  const std::string dir = out / "persist";
  auto failed = launch(with({"--nproc-per-node=1", "--snapshot-persist-dir", dir},
                            python_worker("s.save_bytes(9, b'nine'); sys.exit(4)")),
                       {{"DDP_LAUNCH_SNAPSHOT_DIR", shm.path()}}, 60s);
  INFO(failed.err);
  CHECK(failed.exit_code == 4);
  CHECK(read_file(dir + "/ckpt_000000009.pt") == "nine");
  auto none = launch(with({"--nproc-per-node=1", "--snapshot-persist-dir", out / "none"}, python_worker("pass")),
                     {{"DDP_LAUNCH_SNAPSHOT_DIR", shm.path()}}, 60s);
  CHECK(none.exit_code == 0);
  CHECK(names_in(out / "none").empty());
  CHECK(count_matching(none.err, "wrote the in-memory snapshot") == 0);
}

TEST_CASE("snapshot persist: SIGTERM to the launcher persists before it exits") {
  TempDir shm, logs, out;
  const std::string dir = out / "persist";
  auto worker = python_worker(
      "s.save_bytes(11, b'eleven')\n"
      "if os.environ['LOCAL_RANK'] == '0': open(sys.argv[1], 'w').close()  # rank 0's is the one persisted\n"
      "time.sleep(60)\n");
  worker.push_back(out / "saved");
  std::vector<std::string> argv = {launcher_path(), "--nproc-per-node=2",     "--log-dir",
                                   logs.path(),     "--snapshot-persist-dir", dir};
  argv.insert(argv.end(), worker.begin(), worker.end());
  Background job(argv, {{"DDP_LAUNCH_SNAPSHOT_DIR", shm.path()}});
  REQUIRE(wait_until([&] { return file_exists(out / "saved"); }, 60s));
  job.signal(SIGTERM);
  auto r = job.wait(60s);
  INFO(r.err);
  CHECK(r.exit_code == 128 + SIGTERM);
  CHECK(read_file(dir + "/ckpt_000000011.pt") == "eleven");
  CHECK(persists(logs.path()) == std::vector<std::pair<std::string, int>>{{"stop", 11}});
  CHECK(count_matching(r.err, "ddp-launch: wrote the in-memory snapshot of step 11") == 1);
  CHECK(names_in(shm.path()).empty());
}

TEST_CASE("snapshot persist: a folder that fails mid-job: one warning, the temporary removed, training goes on") {
  TempDir shm, out;
  const std::string dir = out / "persist";
  // Attempt 0: rank 0 saves, replaces the folder with a regular file (writes under it fail, for
  // root too) and fails; the failure's and the end's persists fail; attempt 1 succeeds.
  const std::string body =
      "d = sys.argv[1]\n"
      "if os.environ['TORCHELASTIC_RESTART_COUNT'] == '0':\n"
      "    s.save_bytes(2, b'two'); os.rmdir(d); open(d, 'w').close(); sys.exit(3)\n"
      "s.save_bytes(3, b'three')\n";
  auto worker = python_worker(body);
  worker.push_back(dir);
  auto r = launch(with({"--nproc-per-node=1", "--max-restarts=1", "--snapshot-persist-dir", dir}, worker),
                  {{"DDP_LAUNCH_SNAPSHOT_DIR", shm.path()}}, 60s);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(count_matching(r.err, "warning: cannot write the in-memory snapshot of step") == 1);
  CHECK(count_matching(r.err, "wrote the in-memory snapshot") == 0);
  CHECK(read_file(dir).empty());  // still the file the worker left
  CHECK(names_in(out.path()) == std::vector<std::string>{"persist"});
}

TEST_CASE("snapshot persist: usage errors for the flags") {
  TempDir out;
  write_file(out / "file", "");
  auto under_file = launch({"--snapshot-persist-dir", out / "file/sub", "--no-python", "true"}, {}, 60s);
  CHECK(under_file.exit_code == 121);
  CHECK_THAT(under_file.err, Catch::Contains("--snapshot-persist-dir " + out / "file/sub" + ": cannot create"));
  auto no_dir = launch({"--snapshot-persist-interval=10", "--no-python", "true"}, {}, 60s);
  CHECK(no_dir.exit_code == 121);
  CHECK_THAT(no_dir.err, Catch::Contains("--snapshot-persist-interval needs --snapshot-persist-dir"));
  auto env = launch({"--no-python", "true"}, {{"PET_SNAPSHOT_PERSIST_INTERVAL", "x"}}, 60s);
  CHECK(env.exit_code == 121);
}
