// The rest of libddp: env contract validation, init_method errors, collectives and subgroups,
// missing peers, checkpoints (round trip, resume, kill -9 mid-save), ddp::run's error file,
// ddp::spawn.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <thread>

#include <signal.h>
#include <unistd.h>

#include "ddp/ddp.hpp"
#include "harness.hpp"

namespace ddp::test {
namespace {

std::string config_error(const std::map<std::string, std::string>& vars) {
  try {
    WorkerEnv::from_map(vars);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string init_error(const std::string& init_method) {
  ProcessGroupOptions o;
  o.backend = "gloo";
  o.init_method = init_method;
  o.rank = 0;
  o.world_size = 2;
  o.timeout = std::chrono::seconds(2);
  try {
    init_process_group(o);
  } catch (const ConfigError& e) {
    return e.what();
  }
  destroy_process_group();
  return "";
}

}  // namespace

TEST_CASE("WorkerEnv without a launcher is rank 0 of 1", "[env]") {
  auto env = WorkerEnv::from_map({});
  CHECK(env.rank == 0);
  CHECK(env.world_size == 1);
  CHECK(env.local_rank == 0);
  CHECK(!env.from_launcher);
}

TEST_CASE("WorkerEnv: TORCHELASTIC_USE_AGENT_STORE=True (exactly, as torch reads it) makes every rank a client",
          "[env]") {
  CHECK_FALSE(WorkerEnv::from_map({}).use_agent_store);
  CHECK(WorkerEnv::from_map({{"TORCHELASTIC_USE_AGENT_STORE", "True"}}).use_agent_store);
  CHECK_FALSE(WorkerEnv::from_map({{"TORCHELASTIC_USE_AGENT_STORE", "False"}}).use_agent_store);
  CHECK_FALSE(WorkerEnv::from_map({{"TORCHELASTIC_USE_AGENT_STORE", "1"}}).use_agent_store);
  auto env = WorkerEnv::from_map({{"TORCHELASTIC_USE_AGENT_STORE", "True"}});
  CHECK(WorkerEnv::from_map(env.to_map()).use_agent_store);  // to_map is from_map's inverse
}

TEST_CASE("WorkerEnv reads the torchrun contract", "[env]") {
  auto env = WorkerEnv::from_map({{"RANK", "5"},
                                  {"WORLD_SIZE", "8"},
                                  {"LOCAL_RANK", "1"},
                                  {"LOCAL_WORLD_SIZE", "4"},
                                  {"GROUP_RANK", "1"},
                                  {"GROUP_WORLD_SIZE", "2"},
                                  {"MASTER_ADDR", "node0"},
                                  {"MASTER_PORT", "29500"},
                                  {"TORCHELASTIC_RESTART_COUNT", "2"},
                                  {"TORCHELASTIC_ERROR_FILE", "/tmp/e.json"}});
  CHECK(env.rank == 5);
  CHECK(env.world_size == 8);
  CHECK(env.local_rank == 1);
  CHECK(env.group_rank == 1);
  CHECK(env.master_addr == "node0");
  CHECK(env.master_port == 29500);
  CHECK(env.restart_count == 2);
  CHECK(env.error_file == "/tmp/e.json");
  CHECK(WorkerEnv::from_map(env.to_map()).to_map() == env.to_map());
}

TEST_CASE("Bad env values give ConfigError naming the variable and the fix", "[env]") {
  CHECK_THAT(config_error({{"RANK", "4"}, {"WORLD_SIZE", "4"}, {"MASTER_PORT", "1"}}),
             Catch::Contains("RANK=4 but WORLD_SIZE=4") && Catch::Contains("[0, 3]"));
  CHECK_THAT(config_error({{"RANK", "one"}, {"WORLD_SIZE", "4"}}), Catch::Contains("RANK='one' is not an integer"));
  CHECK_THAT(config_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}}),
             Catch::Contains("MASTER_PORT is not set") && Catch::Contains("MASTER_ADDR"));
  CHECK_THAT(config_error({{"RANK", "0"}, {"WORLD_SIZE", "0"}}), Catch::Contains("WORLD_SIZE=0 is out of range"));
  CHECK_THAT(config_error({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}),
             Catch::Contains("not a TCP port"));
  CHECK_THAT(
      config_error(
          {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}}),
      Catch::Contains("LOCAL_RANK=2 but LOCAL_WORLD_SIZE=2"));
  CHECK_THAT(config_error({{"RANK", "3"}}), Catch::Contains("WORLD_SIZE is not"));
}

TEST_CASE("Bad init_method and backend values give ConfigError", "[pg]") {
  CHECK_THAT(init_error("foo://bar"), Catch::Contains("not supported") && Catch::Contains("tcp://HOST:PORT"));
  CHECK_THAT(init_error("tcp://127.0.0.1"), Catch::Contains("no host:port"));
  CHECK_THAT(init_error("tcp://127.0.0.1:abc"), Catch::Contains("invalid port 'abc'"));
  CHECK_THAT(init_error("tcp://127.0.0.1:0"), Catch::Contains("invalid port"));
  CHECK_THAT(init_error("file://relative/path"), Catch::Contains("absolute path"));
  ProcessGroupOptions o;
  o.backend = "mpi";
  CHECK_THROWS_WITH(init_process_group(o), Catch::Contains("backend 'mpi' is not supported"));
  CHECK(!is_initialized());
  CHECK_THROWS_AS(barrier(), ConfigError);
}

TEST_CASE("Single process without a launcher: rank 0 of 1 with working collectives", "[pg]") {
  init_process_group();
  CHECK(get_rank() == 0);
  CHECK(get_world_size() == 1);
  auto t = torch::ones({2});
  all_reduce(t);
  CHECK(t.sum().item<float>() == 2.0f);
  barrier();
  destroy_process_group();
  CHECK(!is_initialized());
}

TEST_CASE("Collectives and subgroups over gloo with 4 processes", "[pg]") {
  Workers w = run_workers("collectives", 4);
  INFO(w.describe());
  CHECK(w.all_ok());
}

TEST_CASE("tcp:// and file:// init methods work", "[pg]") {
  const TempDir scratch;
  const std::string& dir = scratch.path();
  Workers file = run_workers("collectives", 2, {{"DDP_TEST_INIT_METHOD", "file://" + dir + "/store"}});
  INFO(file.describe());
  CHECK(file.all_ok());
  const int port = free_port();
  Workers tcp = run_workers("collectives", 2, {{"DDP_TEST_INIT_METHOD", "tcp://127.0.0.1:" + std::to_string(port)}});
  INFO(tcp.describe());
  CHECK(tcp.all_ok());
}

TEST_CASE("A missing peer times out with an error naming the rank and address", "[pg]") {
  SECTION("rank 1 never starts") {
    Workers w = run_some_workers("join-only", 2, {0}, {{"DDP_TEST_TIMEOUT_MS", "1500"}}, std::chrono::seconds(30));
    INFO(w.describe());
    CHECK(w.ranks[0].exit_code == 1);
    CHECK_THAT(w.ranks[0].error_file,
               Catch::Contains("TimeoutError") && Catch::Contains("rank(s) 1 of 2") && Catch::Contains("127.0.0.1:"));
  }
  SECTION("rank 0 (the store) never starts") {
    Workers w = run_some_workers("join-only", 2, {1}, {{"DDP_TEST_TIMEOUT_MS", "1500"}}, std::chrono::seconds(30));
    INFO(w.describe());
    CHECK(w.ranks[0].exit_code == 1);
    CHECK_THAT(w.ranks[0].error_file, Catch::Contains("TimeoutError") && Catch::Contains("could not connect") &&
                                          Catch::Contains("is rank 0 running"));
  }
}

TEST_CASE("Checkpoint round trip, resume, and clear errors for foreign/truncated files", "[checkpoint]") {
  Workers w = run_workers("checkpoint", 2);
  INFO(w.describe());
  CHECK(w.all_ok());
}

TEST_CASE("kill -9 during save leaves the previous checkpoint loadable", "[checkpoint]") {
  const TempDir scratch;
  const std::string& dir = scratch.path();
  const std::string path = dir + "/ckpt.pt";
  for (int round = 0; round < 3; ++round) {
    int pid = start_process("save-loop", {{"DDP_TEST_CKPT", path}}, dir + "/out.txt");
    const std::string tmp = path + ".tmp." + std::to_string(pid);
    // Wait until one checkpoint exists and the next save is in progress, then kill -9.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline &&
           !(::access((path + ".first").c_str(), F_OK) == 0 && ::access(tmp.c_str(), F_OK) == 0)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5 * round));
    kill_process(pid, SIGKILL);
    CHECK(wait_exit_code(pid, std::chrono::seconds(10)) == 128 + SIGKILL);
    auto net = torch::nn::Sequential(torch::nn::Linear(1024, 1024), torch::nn::Linear(1024, 1024),
                                     torch::nn::Linear(1024, 1024));
    CheckpointExtra extra;
    REQUIRE_NOTHROW(extra = load_checkpoint(path, *net, nullptr, torch::kCPU));
    const double gen = static_cast<double>(extra.at("gen").toInt());
    for (auto& p : net->parameters()) CHECK(p.min().item<double>() == gen);
    ::unlink((path + ".first").c_str());
  }
}

TEST_CASE("ddp::run writes the @record error file and exits 1", "[run]") {
  Workers w = run_workers("throw", 1);
  INFO(w.describe());
  REQUIRE(w.ranks[0].exit_code == 1);
  CHECK_THAT(w.ranks[0].output, Catch::Contains("[rank 0] error: ddp::ConfigError: boom"));
  auto j = nlohmann::json::parse(w.ranks[0].error_file);
  CHECK(j["message"]["message"] == "ddp::ConfigError: boom: set DDP_X to fix it");
  CHECK(j["message"]["extraInfo"]["py_callstack"].is_string());
  const std::string ts = j["message"]["extraInfo"]["timestamp"];
  CHECK(std::stoll(ts) > 1600000000);
}

TEST_CASE("ddp::run records an exception escaping another thread, then aborts", "[run]") {
  Workers w = run_workers("thread-throws", 1);
  INFO(w.describe());
  CHECK(w.ranks[0].exit_code == 128 + SIGABRT);
  CHECK_THAT(w.ranks[0].error_file,
             Catch::Contains("ddp::DdpError: worker thread failed") && Catch::Contains("std::terminate"));
}

TEST_CASE("ddp::spawn runs a working group and propagates the first failure", "[spawn]") {
  SECTION("success") {
    Workers w = run_workers("spawn-ok", 1);
    INFO(w.describe());
    CHECK(w.all_ok());
    CHECK_THAT(w.ranks[0].output, Catch::Contains("spawn ok"));
  }
  SECTION("rank 1 throws: the others are killed and the parent sees rank 1's error") {
    Workers w = run_workers("spawn-fail", 1, {}, std::chrono::seconds(60));
    INFO(w.describe());
    CHECK(w.all_ok());
    CHECK_THAT(w.ranks[0].output,
               Catch::Contains("caught rank=1 code=1") && Catch::Contains("ddp::DdpError: rank one failed on purpose"));
  }
  SECTION("a rank that never finishes: the timeout kills every rank and names the one it waited for") {
    Workers w = run_workers("spawn-timeout", 1, {}, std::chrono::seconds(60));
    INFO(w.describe());
    CHECK(w.all_ok());
    CHECK_THAT(w.ranks[0].output, Catch::Contains("did not finish within 1500 ms (still running: rank 1)"));
  }
}

}  // namespace ddp::test

namespace ddp::test {
TEST_CASE("Checkpoint resume in one process without a group", "[checkpoint]") {
  const TempDir scratch;
  const std::string& dir = scratch.path();
  auto make = [](int seed) {
    torch::manual_seed(seed);
    return torch::nn::Sequential(torch::nn::Linear(4, 8), torch::nn::Tanh(), torch::nn::Linear(8, 2));
  };
  auto train = [](torch::nn::Sequential& net, torch::optim::SGD& opt, int first, int count) {
    for (int step = first; step < first + count; ++step) {
      torch::manual_seed(100 + step);
      auto x = torch::randn({5, 4});
      opt.zero_grad();
      net->forward(x).pow(2).mean().backward();
      opt.step();
    }
  };
  auto net = make(1);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  train(net, opt, 0, 3);
  save_checkpoint(dir + "/c.pt", net, &opt, {{"step", int64_t{3}}});
  train(net, opt, 3, 2);
  auto net2 = make(2);
  torch::optim::SGD opt2(net2->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  auto extra = load_checkpoint(dir + "/c.pt", net2, &opt2, torch::kCPU);
  CHECK(extra.at("step").toInt() == 3);
  train(net2, opt2, 3, 2);
  auto p1 = net->parameters();
  auto p2 = net2->parameters();
  for (size_t i = 0; i < p1.size(); ++i) {
    INFO("parameter " << i << " max diff " << (p1[i] - p2[i]).abs().max().item<double>());
    CHECK(torch::allclose(p1[i], p2[i], 0, 1e-6));
  }
}
}  // namespace ddp::test

namespace ddp::test {
TEST_CASE("A peer that stops calling collectives gives TimeoutError", "[pg]") {
  Workers w = run_workers("peer-stalls", 2, {{"DDP_TEST_TIMEOUT_MS", "4000"}}, std::chrono::seconds(40));
  INFO(w.describe());
  CHECK(w.ranks[0].exit_code == 1);
  CHECK_THAT(w.ranks[0].error_file, Catch::Contains("ddp::TimeoutError") && Catch::Contains("all_reduce #1") &&
                                        Catch::Contains("failed on rank 0"));
}

TEST_CASE("A peer that dies makes the next collective fail fast with CommError", "[pg]") {
  for (const char* in_ddp : {"0", "1"}) {
    Workers w = run_workers("peer-dies", 2, {{"DDP_TEST_IN_DDP", in_ddp}, {"DDP_TEST_TIMEOUT_MS", "20000"}},
                            std::chrono::seconds(40));
    INFO("in DDP backward: " << in_ddp << "\n" << w.describe());
    CHECK(w.ranks[1].exit_code == 7);
    CHECK(w.ranks[0].exit_code == 1);
    CHECK_THAT(w.ranks[0].error_file, Catch::Contains("ddp::CommError") && Catch::Contains("rank 0") &&
                                          Catch::Contains("peer process probably exited"));
  }
}
}  // namespace ddp::test

namespace ddp::test {
TEST_CASE("A restarted group ignores the keys a crashed attempt left in the store", "[pg]") {
  const TempDir scratch;
  const std::string& dir = scratch.path();
  const Env file{{"DDP_TEST_INIT_METHOD", "file://" + dir + "/store"}};
  Env first = file;
  first["TORCHELASTIC_RESTART_COUNT"] = "0";
  Workers crashed = run_workers("join-and-vanish", 2, first, std::chrono::seconds(30));
  INFO(crashed.describe());
  REQUIRE(crashed.all_ok());
  REQUIRE(::access((dir + "/store").c_str(), F_OK) == 0);  // stale keys are still there
  // Attempt 1 with rank 1 missing: attempt 0's "rank 1 joined" key must not count.
  Env second = file;
  second["TORCHELASTIC_RESTART_COUNT"] = "1";
  second["DDP_TEST_TIMEOUT_MS"] = "1500";
  Workers alone = run_some_workers("join-only", 2, {0}, second, std::chrono::seconds(30));
  INFO(alone.describe());
  CHECK_THAT(alone.ranks[0].error_file, Catch::Contains("waiting for rank(s) 1 of 2"));
  // Attempt 2 with everyone works on the same store file.
  Env third = file;
  third["TORCHELASTIC_RESTART_COUNT"] = "2";
  Workers restarted = run_workers("collectives", 2, third, std::chrono::seconds(30));
  INFO(restarted.describe());
  CHECK(restarted.all_ok());
}
}  // namespace ddp::test
