// Each worker's environment, command line and devices, as the real launcher sets them.
#include <catch2/catch.hpp>

#include <map>

#include "tests/support/test_support.hpp"

using namespace ddp::test;

namespace {

// Runs N workers that dump their environment to DIR/env.RANK; returns rank -> env.
std::map<int, std::map<std::string, std::string>> dump_env(const TempDir& dir, std::vector<std::string> flags,
                                                           const EnvOverrides& env = {}, int expect_workers = -1) {
  flags.insert(flags.end(), {"sh", "-c", "env > " + dir.path() + "/env.$RANK"});
  auto r = launch(flags, env);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::map<int, std::map<std::string, std::string>> out;
  for (int rank = 0; rank < 64; ++rank) {
    if (!file_exists(dir / ("env." + std::to_string(rank)))) continue;
    for (const auto& line : lines_of(read_file(dir / ("env." + std::to_string(rank))))) {
      auto eq = line.find('=');
      if (eq != std::string::npos) out[rank][line.substr(0, eq)] = line.substr(eq + 1);
    }
  }
  if (expect_workers >= 0) REQUIRE(static_cast<int>(out.size()) == expect_workers);
  return out;
}

}  // namespace

TEST_CASE("every worker gets torchrun's environment contract") {
  TempDir dir;
  auto envs = dump_env(dir, {"--nproc-per-node=4", "--max-restarts=2", "--rdzv-id=job42"},
                       {{"OMP_NUM_THREADS", kUnset}, {"NCCL_ASYNC_ERROR_HANDLING", kUnset}, {"MY_VAR", "kept"}}, 4);
  std::string port = envs[0]["MASTER_PORT"];
  CHECK(std::stoi(port) > 0);
  for (int rank = 0; rank < 4; ++rank) {
    auto& e = envs[rank];
    CHECK(e["RANK"] == std::to_string(rank));
    CHECK(e["LOCAL_RANK"] == std::to_string(rank));
    CHECK(e["WORLD_SIZE"] == "4");
    CHECK(e["LOCAL_WORLD_SIZE"] == "4");
    CHECK(e["GROUP_RANK"] == "0");
    CHECK(e["GROUP_WORLD_SIZE"] == "1");
    CHECK(e["ROLE_NAME"] == "default");
    CHECK(e["ROLE_RANK"] == std::to_string(rank));
    CHECK(e["ROLE_WORLD_SIZE"] == "4");
    CHECK(e["MASTER_ADDR"] == "127.0.0.1");
    CHECK(e["MASTER_PORT"] == port);  // the same store for everyone
    CHECK(e["TORCHELASTIC_RESTART_COUNT"] == "0");
    CHECK(e["TORCHELASTIC_MAX_RESTARTS"] == "2");
    CHECK(e["TORCHELASTIC_RUN_ID"] == "job42");
    CHECK(e["TORCHELASTIC_USE_AGENT_STORE"] == "True");  // the launcher hosts the workers' store
    CHECK_THAT(e["TORCHELASTIC_ERROR_FILE"], Catch::EndsWith("/attempt_0/" + std::to_string(rank) + "/error.json"));
    CHECK(e["OMP_NUM_THREADS"] == "1");
    CHECK(e["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1");
    CHECK(e.count("NCCL_ASYNC_ERROR_HANDLING") == 0);  // deprecated in torch 2.x: every rank would warn
    CHECK(e["TORCHELASTIC_SIGNALS_TO_HANDLE"] == "SIGTERM,SIGINT,SIGHUP,SIGQUIT");
    CHECK(e["MY_VAR"] == "kept");
  }
}

TEST_CASE("torchrun 2.x defaults: one worker keeps OpenMP's threads, a plain single-node job gets a uuid run id") {
  TempDir dir;
  auto one =
      dump_env(dir, {"--nproc-per-node=1", "--signals-to-handle=SIGTERM,SIGUSR1"}, {{"OMP_NUM_THREADS", kUnset}}, 1);
  CHECK(one[0].count("OMP_NUM_THREADS") == 0);
  CHECK(one[0]["TORCHELASTIC_SIGNALS_TO_HANDLE"] == "SIGTERM,SIGUSR1");
  const std::string id = one[0]["TORCHELASTIC_RUN_ID"];
  REQUIRE(id.size() == 36);
  CHECK(id[14] == '4');  // version 4
  CHECK(id[8] == '-');
}

TEST_CASE("an explicit master address and port reach the workers") {
  TempDir dir;
  auto envs = dump_env(dir, {"--nproc-per-node=2", "--master-addr=localhost", "--master-port=0"}, {}, 2);
  CHECK(envs[0]["MASTER_ADDR"] == "localhost");
  CHECK(envs[1]["MASTER_PORT"] != "0");  // 0 means: pick a free one
}

TEST_CASE("dry run of node 1 of 2 shows the upper half of the ranks") {
  auto r = launch({"--dry-run", "--nnodes=2", "--node-rank=1", "--nproc-per-node=2", "--master-addr=10.1.2.3", "true"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("2 workers on node 1 of 2 (world size 4)"));
  CHECK_THAT(r.out, Catch::Contains("rank 3 (local_rank 1):"));
  CHECK_THAT(r.out, Catch::Contains("  GROUP_RANK=1"));
  CHECK_THAT(r.out, Catch::Contains("  MASTER_ADDR=10.1.2.3"));
}

TEST_CASE("OMP_NUM_THREADS set by the user is kept, and the notice appears only otherwise") {
  TempDir dir;
  auto r = launch({"--nproc-per-node=2", "sh", "-c", "echo $OMP_NUM_THREADS"}, {{"OMP_NUM_THREADS", "3"}});
  CHECK(r.exit_code == 0);
  CHECK(count_matching(r.out, ": 3") == 2);
  CHECK_THAT(r.err, !Catch::Contains("OMP_NUM_THREADS is not set"));
  auto unset = launch({"--nproc-per-node=2", "true"}, {{"OMP_NUM_THREADS", kUnset}});
  CHECK(count_matching(unset.err, "OMP_NUM_THREADS is not set") == 1);
}

TEST_CASE("${local_rank} and the legacy --local_rank argument (--local-rank on request)") {
  TempDir dir;
  write_file(dir / "show.sh", "#!/bin/sh\necho \"$@\"\n");
  REQUIRE(run({"chmod", "+x", dir / "show.sh"}).exit_code == 0);
  auto r = launch({"--nproc-per-node=2", "--local-ranks-filter=1", "--use-env=false", dir / "show.sh", "${local_rank}",
                   "x${local_rank}"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("[rank1]: --local_rank=1 1 x1"));
  auto two =
      launch({"--nproc-per-node=2", "--local-ranks-filter=1", "--local-rank-arg=local-rank", dir / "show.sh", "y"});
  CHECK(two.exit_code == 0);
  CHECK_THAT(two.out, Catch::Contains("[rank1]: --local-rank=1 y"));
}

TEST_CASE("run-path runs a file of any name with the interpreter") {
  TempDir dir;
  write_file(dir / "train_job", "");
  auto r = launch({"--run-path", dir / "train_job", "--lr", "1"}, {{"PYTHON_EXEC", "/bin/echo"}});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("[rank0]: -u " + (dir / "train_job") + " --lr 1"));
  auto u = launch({"--run_path", "--no-python", dir / "train_job"}, {{"PYTHON_EXEC", "/bin/echo"}});
  CHECK_THAT(u.out, Catch::Contains("[rank0]: -u " + (dir / "train_job")));
}

TEST_CASE("an unknown --rdzv-conf key is ignored with a warning and a bad value stays an error") {
  auto r = launch({"--rdzv-conf=colour=blue,join_timeout=30", "sh", "-c", "echo ran"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("[rank0]: ran"));
  CHECK_THAT(r.err, Catch::Contains("ignoring unknown key 'colour'"));
  auto bad = launch({"--rdzv-conf=join_timeout=never", "sh", "-c", "echo ran"});
  CHECK(bad.exit_code == 121);
  CHECK_THAT(bad.out, !Catch::Contains("ran"));
}

TEST_CASE("an absolute program path that does not exist: no ./ hint") {
  auto r = launch({"/nonexistent/train"});
  CHECK(r.exit_code == 127);
  CHECK_THAT(r.err, Catch::Contains("'/nonexistent/train' not found; check the path"));
  CHECK_THAT(r.err, !Catch::Contains("e.g."));
}

TEST_CASE("python scripts run through PYTHON_EXEC -u, modules with -m") {
  TempDir dir;
  write_file(dir / "train.py", "");
  auto r = launch({"--nproc-per-node=1", dir / "train.py", "--lr", "0.1"}, {{"PYTHON_EXEC", "/bin/echo"}});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("[rank0]: -u " + (dir / "train.py") + " --lr 0.1"));
  auto m = launch({"-m", "pkg.mod", "a"}, {{"PYTHON_EXEC", "/bin/echo"}});
  CHECK_THAT(m.out, Catch::Contains("[rank0]: -u -m pkg.mod a"));
}

TEST_CASE("CUDA_VISIBLE_DEVICES passes through unchanged by default") {
  TempDir dir;
  auto envs = dump_env(dir, {"--nproc-per-node=2"}, {{"CUDA_VISIBLE_DEVICES", "3,1"}}, 2);
  CHECK(envs[0]["CUDA_VISIBLE_DEVICES"] == "3,1");
  CHECK(envs[1]["CUDA_VISIBLE_DEVICES"] == "3,1");
}

TEST_CASE("devices flag selects GPUs among CUDA_VISIBLE_DEVICES, isolation gives one each") {
  TempDir dir;
  auto envs = dump_env(dir, {"--nproc-per-node=gpu", "--devices=1,3"}, {{"CUDA_VISIBLE_DEVICES", "4,5,6,7"}}, 2);
  CHECK(envs[0]["CUDA_VISIBLE_DEVICES"] == "5,7");
  CHECK(envs[1]["CUDA_VISIBLE_DEVICES"] == "5,7");
  CHECK(envs[1]["LOCAL_RANK"] == "1");
  TempDir iso;
  auto isolated =
      dump_env(iso, {"--nproc-per-node=3", "--virtual-local-rank"}, {{"CUDA_VISIBLE_DEVICES", "4,5,6,7"}}, 3);
  for (int rank = 0; rank < 3; ++rank) {
    CHECK(isolated[rank]["CUDA_VISIBLE_DEVICES"] == std::to_string(4 + rank));
    CHECK(isolated[rank]["LOCAL_RANK"] == "0");
    CHECK(isolated[rank]["RANK"] == std::to_string(rank));
  }
}

TEST_CASE("dry run prints each worker's command and environment and starts nothing") {
  TempDir dir;
  auto r = launch({"--nproc-per-node=2", "--dry-run", "sh", "-c", "touch " + (dir / "ran")});
  CHECK(r.exit_code == 0);
  CHECK_FALSE(file_exists(dir / "ran"));
  CHECK_THAT(r.out, Catch::Contains("rank 1 (local_rank 1):"));
  CHECK_THAT(r.out, Catch::Contains("  command: sh -c 'touch "));
  CHECK_THAT(r.out, Catch::Contains("  RANK=1"));
  CHECK_THAT(r.out, Catch::Contains("  WORLD_SIZE=2"));
  CHECK_THAT(r.out, Catch::Contains("  MASTER_PORT="));
}
