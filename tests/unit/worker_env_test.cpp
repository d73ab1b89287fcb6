// The worker environment contract and the worker command line.
#include <catch2/catch.hpp>

#include "launcher/worker/worker_command.hpp"
#include "launcher/worker/worker_env.hpp"
#include "tests/support/test_support.hpp"

using namespace ddp::launch;
using namespace ddp::launch::cli;
using namespace ddp::launch::worker;

TEST_CASE("every contract variable is set per rank") {
  GroupPlan plan;
  plan.node_rank = 1;
  plan.nnodes = 2;
  plan.base_rank = 4;
  plan.world_size = 8;
  plan.local_world_size = 4;
  plan.master_addr = "node0";
  plan.master_port = 29501;
  plan.run_id = "job7";
  plan.max_restarts = 3;
  plan.restart_count = 2;
  plan.role_base_rank = 4;
  plan.role_world_size = 8;
  Environment base{{"PATH", "/bin"}, {"HOME", "/root"}};
  auto env = worker_environment(base, plan, WorkerSlot{3, "/logs/err.json", std::nullopt, false, ""});
  CHECK(env["RANK"] == "7");
  CHECK(env["LOCAL_RANK"] == "3");
  CHECK(env["WORLD_SIZE"] == "8");
  CHECK(env["LOCAL_WORLD_SIZE"] == "4");
  CHECK(env["GROUP_RANK"] == "1");
  CHECK(env["GROUP_WORLD_SIZE"] == "2");
  CHECK(env["ROLE_NAME"] == "default");
  CHECK(env["ROLE_RANK"] == "7");
  CHECK(env["ROLE_WORLD_SIZE"] == "8");
  CHECK(env["MASTER_ADDR"] == "node0");
  CHECK(env["MASTER_PORT"] == "29501");
  CHECK(env["TORCHELASTIC_RESTART_COUNT"] == "2");
  CHECK(env["TORCHELASTIC_MAX_RESTARTS"] == "3");
  CHECK(env["TORCHELASTIC_RUN_ID"] == "job7");
  CHECK(env["TORCHELASTIC_USE_AGENT_STORE"] == "False");  // a plan without the launcher's store
  CHECK(env["TORCHELASTIC_ERROR_FILE"] == "/logs/err.json");
  CHECK(env["OMP_NUM_THREADS"] == "1");
  CHECK(env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1");
  CHECK(env.count("NCCL_ASYNC_ERROR_HANDLING") == 0);  // deprecated: every 2.x rank would warn
  CHECK(env["TORCHELASTIC_SIGNALS_TO_HANDLE"] == "SIGTERM,SIGINT,SIGHUP,SIGQUIT");
  CHECK(env["PATH"] == "/bin");
  CHECK(env.count("CUDA_VISIBLE_DEVICES") == 0);
  for (const auto& name : contract_variables())
    if (name != "CUDA_VISIBLE_DEVICES") CHECK(env.count(name) == 1);
}

TEST_CASE("user settings of OMP_NUM_THREADS and NCCL error handling are kept") {
  Environment base{{"OMP_NUM_THREADS", "6"}, {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "0"}, {"CUDA_VISIBLE_DEVICES", "2,3"}};
  auto env = worker_environment(base, GroupPlan{}, WorkerSlot{});
  CHECK(env["OMP_NUM_THREADS"] == "6");
  CHECK(env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "0");
  CHECK(env.count("NCCL_ASYNC_ERROR_HANDLING") == 0);
  CHECK(env["CUDA_VISIBLE_DEVICES"] == "2,3");  // passed through unchanged
  // The old name (torch < 2.2 reads only it) passes through when the user set it; the new one
  // is still set, as torchrun 2.x does.
  auto old_name = worker_environment({{"NCCL_ASYNC_ERROR_HANDLING", "0"}}, GroupPlan{}, WorkerSlot{});
  CHECK(old_name["NCCL_ASYNC_ERROR_HANDLING"] == "0");
  CHECK(old_name["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1");
}

TEST_CASE("OMP_NUM_THREADS=1 only when unset and more than one worker shares the node (torchrun 2.x)") {
  GroupPlan one;
  one.local_world_size = 1;
  CHECK(worker_environment({}, one, WorkerSlot{}).count("OMP_NUM_THREADS") == 0);
  GroupPlan two;
  two.local_world_size = 2;
  CHECK(worker_environment({}, two, WorkerSlot{}).at("OMP_NUM_THREADS") == "1");
  CHECK(worker_environment({{"OMP_NUM_THREADS", "4"}}, two, WorkerSlot{}).at("OMP_NUM_THREADS") == "4");
}

TEST_CASE("TORCHELASTIC_SIGNALS_TO_HANDLE is --signals-to-handle as given, over the launcher's own") {
  GroupPlan plan;
  plan.signals_to_handle = "SIGTERM,SIGUSR1,SIGUSR2";
  auto env = worker_environment({{"TORCHELASTIC_SIGNALS_TO_HANDLE", "SIGINT"}}, plan, WorkerSlot{});
  CHECK(env["TORCHELASTIC_SIGNALS_TO_HANDLE"] == "SIGTERM,SIGUSR1,SIGUSR2");
}

TEST_CASE("the Python hooks directory ends PYTHONPATH, after the user's entries") {
  WorkerSlot slot;
  slot.python_hooks_dir = "/tmp/hooks";
  CHECK(worker_environment({}, GroupPlan{}, slot).at("PYTHONPATH") == "/tmp/hooks");
  CHECK(worker_environment({{"PYTHONPATH", ""}}, GroupPlan{}, slot).at("PYTHONPATH") == "/tmp/hooks");
  CHECK(worker_environment({{"PYTHONPATH", "/a:/b"}}, GroupPlan{}, slot).at("PYTHONPATH") == "/a:/b:/tmp/hooks");
  CHECK(worker_environment({{"PYTHONPATH", "/a:"}}, GroupPlan{}, slot).at("PYTHONPATH") == "/a:/tmp/hooks");
  CHECK(worker_environment({}, GroupPlan{}, WorkerSlot{}).count("PYTHONPATH") == 0);
  CHECK(worker_environment({{"PYTHONPATH", "/a"}}, GroupPlan{}, WorkerSlot{}).at("PYTHONPATH") == "/a");
}

TEST_CASE("isolation mode: one device and LOCAL_RANK 0") {
  GroupPlan plan;
  plan.local_world_size = 2;
  plan.world_size = 2;
  auto env = worker_environment({}, plan, WorkerSlot{1, "", std::string("5"), true, ""});
  CHECK(env["CUDA_VISIBLE_DEVICES"] == "5");
  CHECK(env["LOCAL_RANK"] == "0");
  CHECK(env["RANK"] == "1");
}

TEST_CASE("${local_rank} is replaced in program arguments") {
  CHECK(substitute_local_rank("--out=log_${local_rank}.txt", 3) == "--out=log_3.txt");
  CHECK(substitute_local_rank("${local_rank}${local_rank}", 12) == "1212");
  CHECK(substitute_local_rank("${rank}", 1) == "${rank}");
}

TEST_CASE("worker commands: executables directly, .py through python, -m, legacy flag") {
  ddp::test::TempDir dir;
  ddp::test::write_file(dir / "train.py", "print(1)\n");
  Environment env{{"PATH", "/usr/bin:/bin"}, {"PYTHON_EXEC", "/bin/echo"}};
  WorkerCommandSpec o;
  o.program = dir / "train.py";
  o.args = {"--x", "${local_rank}"};
  auto py = resolve_worker_command(o, env);
  CHECK(py.executable == "/bin/echo");
  CHECK(py.argv_for(2) == std::vector<std::string>{"/bin/echo", "-u", dir / "train.py", "--x", "2"});

  o.local_rank_flag = "--local_rank";
  CHECK(resolve_worker_command(o, env).argv_for(1) ==
        std::vector<std::string>{"/bin/echo", "-u", dir / "train.py", "--local_rank=1", "--x", "1"});
  o.local_rank_flag = "--local-rank";
  CHECK(resolve_worker_command(o, env).argv_for(1) ==
        std::vector<std::string>{"/bin/echo", "-u", dir / "train.py", "--local-rank=1", "--x", "1"});

  WorkerCommandSpec rp;  // --run-path: any file name goes through the interpreter
  ddp::test::write_file(dir / "train_script", "print(1)\n");
  rp.program = dir / "train_script";
  rp.run_path = true;
  CHECK(resolve_worker_command(rp, env).argv_for(0) ==
        std::vector<std::string>{"/bin/echo", "-u", dir / "train_script"});
  rp.no_python = true;  // torchrun: --run-path wins over --no-python
  CHECK(resolve_worker_command(rp, env).executable == "/bin/echo");

  WorkerCommandSpec m;
  m.program = "pkg.train";
  m.module = true;
  CHECK(resolve_worker_command(m, env).argv_for(0) == std::vector<std::string>{"/bin/echo", "-u", "-m", "pkg.train"});

  WorkerCommandSpec exe;
  exe.program = "true";
  auto direct = resolve_worker_command(exe, env);
  CHECK((direct.executable == "/usr/bin/true" || direct.executable == "/bin/true"));
  CHECK(direct.argv_for(0) == std::vector<std::string>{"true"});

  WorkerCommandSpec nopy;
  nopy.program = dir / "train.py";
  nopy.no_python = true;  // not executable: a clear error
  CHECK_THROWS_WITH(resolve_worker_command(nopy, env), Catch::Contains("cannot be executed"));
}

TEST_CASE("TORCHELASTIC_USE_AGENT_STORE is True only when the launcher's store serves MASTER_PORT") {
  GroupPlan plan;
  WorkerSlot slot;
  CHECK(worker_environment({}, plan, slot)["TORCHELASTIC_USE_AGENT_STORE"] == "False");
  plan.agent_store = true;
  CHECK(worker_environment({}, plan, slot)["TORCHELASTIC_USE_AGENT_STORE"] == "True");
}
