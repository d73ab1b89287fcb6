// torchrun 2.x's flags and defaults: --event-log-handler, --numa-binding (and its pure CPU
// choice), --duplicate-*-filters (the list syntax and the line match), --print-completion,
// --nproc-per-node=xpu, --start-method's choices, TORCH_DISABLE_SHARE_RDZV_TCP_STORE, the
// fresh run id of a plain single-node job, and what a many-host launch forwards.
#include <catch2/catch.hpp>

#include "launcher/cli/completion.hpp"
#include "launcher/cli/option_parsers.hpp"
#include "launcher/many_hosts/plan/env_forward.hpp"
#include "launcher/worker/numa_binding.hpp"
#include "launcher/worker/output.hpp"
#include "parse_helpers.hpp"

using namespace ddp::launch;
using namespace ddp::launch::cli;
using ddp::launch::cli::test::parse;
using ddp::launch::cli::test::usage_error_of;

TEST_CASE("torchrun 2.x: --event-log-handler null/console/dynamic_rendezvous, both spellings and PET_") {
  CHECK_FALSE(parse({"prog"}).events_to_console);
  CHECK_FALSE(parse({"--event-log-handler=null", "prog"}).events_to_console);
  CHECK(parse({"--event_log_handler", "console", "prog"}).events_to_console);
  CHECK_FALSE(parse({"--event-log-handler=dynamic_rendezvous", "prog"}).events_to_console);
  CHECK(parse({"prog"}, {{"PET_EVENT_LOG_HANDLER", "console"}}).events_to_console);
  CHECK(parse({"--event", "console", "prog"}).events_to_console);  // torchrun's prefix
  auto msg = usage_error_of({"--event-log-handler=scribe", "prog"});
  CHECK_THAT(msg, Catch::Contains("null, console, dynamic_rendezvous"));
  CHECK_THAT(msg, Catch::Contains("events.jsonl"));
}

TEST_CASE("torchrun 2.x: --numa-binding takes torch's AffinityMode values, exclusive and core-complex refused") {
  CHECK(parse({"prog"}).numa_binding.empty());
  CHECK(parse({"--numa-binding=node", "prog"}).numa_binding == "node");
  CHECK(parse({"--numa_binding", "socket", "prog"}).numa_binding == "socket");
  CHECK(parse({"prog"}, {{"PET_NUMA_BINDING", "node"}}).numa_binding == "node");
  CHECK_THAT(usage_error_of({"--numa-binding=exclusive", "prog"}), Catch::Contains("use node"));
  CHECK_THAT(usage_error_of({"--numa-binding=core-complex", "prog"}), Catch::Contains("whole NUMA nodes"));
  CHECK_THAT(usage_error_of({"--numa-binding=gpu", "prog"}), Catch::Contains("node, socket, exclusive, core-complex"));
}

TEST_CASE("numa binding: cpulists, node and socket modes, the allowed CPUs") {
  CHECK(*worker::parse_cpu_list("0-3,8,10-11\n") == std::vector<int>{0, 1, 2, 3, 8, 10, 11});
  CHECK(worker::parse_cpu_list("")->empty());
  CHECK_FALSE(worker::parse_cpu_list("3-1"));
  CHECK_FALSE(worker::parse_cpu_list("a"));
  CHECK(worker::format_cpu_list({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11");
  CHECK(worker::format_cpu_list({}).empty());
  worker::NumaTopology t;
  t.node_cpus = {{0, {0, 1}}, {1, {2, 3}}, {2, {4, 5}}, {3, {6, 7}}};
  t.node_socket = {{0, 0}, {1, 0}, {2, 1}, {3, 1}};
  const std::vector<int> all{0, 1, 2, 3, 4, 5, 6, 7};
  CHECK(worker::numa_binding_cpus("node", 2, t, all) == std::vector<int>{4, 5});
  CHECK(worker::numa_binding_cpus("socket", 2, t, all) == std::vector<int>{4, 5, 6, 7});
  CHECK(worker::numa_binding_cpus("socket", 1, t, {1, 2, 6}) == std::vector<int>{1, 2});  // taskset'd launcher
  CHECK(worker::numa_binding_cpus("node", 9, t, all).empty());                            // unknown node
}

TEST_CASE("torchrun 2.x: --duplicate-*-filters, torchrun's comma list with ,, for a comma") {
  CHECK(parse_duplicate_filters("a,b") == std::vector<std::string>{"a", "b"});
  CHECK(parse_duplicate_filters("loss,,acc,step") == std::vector<std::string>{"loss,acc", "step"});
  CHECK(parse_duplicate_filters("") == std::vector<std::string>{""});  // matches every line, as torchrun
  CHECK(parse_duplicate_filters("a,") == std::vector<std::string>{"a", ""});
  auto o = parse({"--duplicate-stdout-filters=loss,,x,step", "--duplicate_stderr_filters", "Error", "prog"});
  CHECK(*o.duplicate_stdout_filters == std::vector<std::string>{"loss,x", "step"});
  CHECK(*o.duplicate_stderr_filters == std::vector<std::string>{"Error"});
  CHECK_FALSE(parse({"prog"}).duplicate_stdout_filters);
  CHECK_FALSE(parse({"prog"}, {{"PET_DUPLICATE_STDOUT_FILTERS", ""}}).duplicate_stdout_filters);  // empty: unset
  CHECK(*parse({"prog"}, {{"PET_DUPLICATE_STDERR_FILTERS", "W"}}).duplicate_stderr_filters ==
        std::vector<std::string>{"W"});
  CHECK(worker::matches_any("step 3 loss 0.5\n", {"acc", "loss"}));
  CHECK_FALSE(worker::matches_any("step 3\n", {"acc", "loss"}));
  CHECK(worker::matches_any("anything\n", {""}));
  CHECK_FALSE(worker::matches_any("anything\n", {}));
}

TEST_CASE("torchrun 2.x: --print-completion prints a script and starts nothing") {
  auto bash = parse_command_line({"--print-completion", "bash"}, {});
  CHECK_FALSE(bash.options);
  CHECK_THAT(bash.text, Catch::Contains("complete -o default -F _ddp_launch ddp-launch"));
  CHECK_THAT(bash.text, Catch::Contains("--nproc-per-node"));
  CHECK_THAT(bash.text, Catch::Contains("--duplicate_stderr_filters"));
  CHECK_THAT(completion_script("zsh", {"--a"}), Catch::Contains("bashcompinit"));
  CHECK_THAT(completion_script("tcsh", {"--a", "--b"}), Catch::Contains("'c/--/(a b)/'"));
  CHECK_THAT(usage_error_of({"--print-completion=fish"}), Catch::Contains("bash, zsh or tcsh"));
}

TEST_CASE("torchrun 2.x: --nproc-per-node=xpu (and a PrivateUse1 name) are refused with the reason") {
  CHECK_THAT(usage_error_of({"--nproc-per-node=xpu", "prog"}), Catch::Contains("Intel XPU"));
  CHECK_THAT(usage_error_of({"--nproc-per-node=privateuseone", "prog"}), Catch::Contains("--nproc-per-node=N"));
}

TEST_CASE("torchrun 2.x: --start-method takes spawn, fork or forkserver only") {
  parse({"--start-method=fork", "prog"});
  parse({"--start_method", "forkserver", "prog"});
  CHECK_THAT(usage_error_of({"--start-method=thread", "prog"}), Catch::Contains("spawn, fork, forkserver"));
}

TEST_CASE("TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 is --worker-store=rank0, with one notice, the flag wins") {
  auto o = parse({"prog"}, {{"TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "1"}});
  CHECK_FALSE(o.launcher_worker_store);
  REQUIRE(o.notices.size() == 1);
  CHECK_THAT(o.notices[0], Catch::Contains("--worker-store=rank0"));
  CHECK(parse({"prog"}, {{"TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "0"}}).launcher_worker_store);
  CHECK(
      parse({"--worker-store=launcher", "prog"}, {{"TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "1"}}).launcher_worker_store);
}

TEST_CASE("torchrun 2.x: a plain single-node job gets a fresh run id, an explicit id, port or endpoint keeps it") {
  CHECK(parse({"prog"}).fresh_run_id);
  CHECK(parse({"--standalone", "prog"}).fresh_run_id);
  CHECK_FALSE(parse({"--rdzv-id=job7", "prog"}).fresh_run_id);
  CHECK_FALSE(parse({"--master-port=29500", "prog"}).fresh_run_id);
  CHECK_FALSE(parse({"prog"}, {{"PET_MASTER_PORT", "29500"}}).fresh_run_id);
  CHECK_FALSE(parse({"--rdzv-backend=c10d", "--rdzv-endpoint=localhost:1234", "prog"}).fresh_run_id);
  CHECK_FALSE(parse({"--nnodes=2", "--master-addr=a", "prog"}).fresh_run_id);
}

TEST_CASE("torchrun 2.x: TORCHELASTIC_SIGNALS_TO_HANDLE is the flag's text") {
  CHECK(parse({"prog"}).signals_to_handle_text == "SIGTERM,SIGINT,SIGHUP,SIGQUIT");
  CHECK(parse({"--signals-to-handle=SIGTERM,SIGUSR1", "prog"}).signals_to_handle_text == "SIGTERM,SIGUSR1");
}

TEST_CASE("many hosts: the BLAS/OpenMP/oneDNN/cuBLAS tuning a user sets reaches every host") {
  const std::map<std::string, std::string> env{{"OPENBLAS_CORETYPE", "Haswell"},
                                               {"OPENBLAS_L2_SIZE", "262144"},
                                               {"OPENBLAS_NUM_THREADS", "4"},
                                               {"GOTO_NUM_THREADS", "4"},
                                               {"MKL_CBWR", "AVX2"},
                                               {"MKL_NUM_THREADS", "4"},
                                               {"KMP_AFFINITY", "compact"},
                                               {"GOMP_SPINCOUNT", "0"},
                                               {"BLIS_NUM_THREADS", "2"},
                                               {"ONEDNN_MAX_CPU_ISA", "AVX2"},
                                               {"DNNL_MAX_CPU_ISA", "AVX2"},
                                               {"GLOO_SOCKET_IFNAME", "eth0"},
                                               {"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"},
                                               {"TORCHINDUCTOR_CACHE_DIR", "/c"},
                                               {"CUBLAS_WORKSPACE_CONFIG", ":4096:8"},
                                               {"CUDNN_LOGINFO_DBG", "1"},
                                               {"NVIDIA_TF32_OVERRIDE", "0"},
                                               {"OMP_NUM_THREADS", "4"},
                                               {"NVIDIA_VISIBLE_DEVICES", "0"},
                                               {"CUDA_VISIBLE_DEVICES", "0"},
                                               {"MASTER_ADDR", "x"},
                                               {"PET_NNODES", "2"},
                                               {"TORCHELASTIC_RUN_ID", "r"},
                                               {"HOME", "/root"}};
  auto out = many_hosts::plan::forwarded_environment(env, many_hosts::plan::default_forward_prefixes(), {});
  for (const char* name :
       {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "MKL_CBWR",
        "MKL_NUM_THREADS", "KMP_AFFINITY", "GOMP_SPINCOUNT", "BLIS_NUM_THREADS", "ONEDNN_MAX_CPU_ISA",
        "DNNL_MAX_CPU_ISA", "GLOO_SOCKET_IFNAME", "PYTORCH_CUDA_ALLOC_CONF", "TORCHINDUCTOR_CACHE_DIR",
        "CUBLAS_WORKSPACE_CONFIG", "CUDNN_LOGINFO_DBG", "NVIDIA_TF32_OVERRIDE", "OMP_NUM_THREADS"})
    CHECK(out.count(name) == 1);
  for (const char* name :
       {"NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "MASTER_ADDR", "PET_NNODES", "TORCHELASTIC_RUN_ID", "HOME"})
    CHECK(out.count(name) == 0);
  CHECK(out.at("OPENBLAS_CORETYPE") == "Haswell");
  CHECK_THROWS(many_hosts::plan::forward_prefixes("NVIDIA_VISIBLE_DEVICES"));
}
