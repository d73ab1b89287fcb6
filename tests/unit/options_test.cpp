// Option parsing: both spellings, PET_* defaults, prefix-command mode, validation errors.
#include <catch2/catch.hpp>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/cli/option_parsers.hpp"
#include "launcher/cli/options.hpp"
#include "launcher/cli/rendezvous_conf.hpp"
#include "parse_helpers.hpp"

using namespace ddp::launch;
using namespace ddp::launch::cli;
using ddp::launch::cli::test::parse;
using ddp::launch::cli::test::usage_error_of;

TEST_CASE("both spellings of every torchrun flag are accepted") {
  auto a = parse({"--nproc_per_node=4", "--max_restarts", "2", "--master_port=1234", "--node_rank=0", "--log_dir",
                  "/tmp/x", "--local_ranks_filter=0", "prog"});
  auto b = parse({"--nproc-per-node=4", "--max-restarts", "2", "--master-port=1234", "--node-rank=0", "--log-dir",
                  "/tmp/x", "--local-ranks-filter=0", "prog"});
  for (const auto& o : {a, b}) {
    CHECK(o.nproc.kind == NprocSpec::Kind::kCount);
    CHECK(o.nproc.count == 4);
    CHECK(o.max_restarts == 2);
    CHECK(o.master_port == 1234);
    CHECK(o.log_dir == "/tmp/x");
    CHECK(o.local_ranks_filter == std::set<int>{0});
  }
}

TEST_CASE("everything after PROGRAM belongs to the program") {
  auto o = parse({"--nproc-per-node", "2", "./train", "--nproc-per-node=7", "-m", "--epochs", "3"});
  CHECK(o.program == "./train");
  CHECK(o.program_args == std::vector<std::string>{"--nproc-per-node=7", "-m", "--epochs", "3"});
  CHECK(o.nproc.count == 2);
  CHECK_FALSE(o.module);
}

TEST_CASE("a -- separates options from the program") {
  auto o = parse({"--nproc-per-node=2", "--", "prog", "x"});
  CHECK(o.program == "prog");
  CHECK(o.program_args == std::vector<std::string>{"x"});
}

TEST_CASE("PET_ environment variables are defaults, the command line wins") {
  Environment env{{"PET_NPROC_PER_NODE", "3"}, {"PET_MAX_RESTARTS", "5"}, {"PET_STANDALONE", "1"}};
  auto o = parse({"prog"}, env);
  CHECK(o.nproc.count == 3);
  CHECK(o.max_restarts == 5);
  CHECK(o.standalone);
  auto p = parse({"--nproc-per-node=2", "prog"}, env);
  CHECK(p.nproc.count == 2);
}

TEST_CASE("defaults match torchrun") {
  auto o = parse({"prog"});
  CHECK(o.nproc.count == 1);
  CHECK(o.nnodes_min == 1);
  CHECK(o.nnodes_max == 1);
  CHECK(o.node_rank == 0);
  CHECK(o.max_restarts == 0);
  CHECK(o.shutdown_timeout_s == 30.0);
  CHECK(o.role == "default");
  CHECK(o.rdzv_id == "none");
  CHECK_FALSE(o.master_port);
  CHECK(o.signals_to_handle == default_stop_signals());
  CHECK(o.local_rank_flag.empty());
  CHECK(o.stdin_rank_auto);
  CHECK_FALSE(o.run_path);
}

TEST_CASE("nproc-per-node accepts a count, gpu, cpu and auto") {
  CHECK(parse_nproc("8").count == 8);
  CHECK(parse_nproc("gpu").kind == NprocSpec::Kind::kGpu);
  CHECK(parse_nproc("cpu").kind == NprocSpec::Kind::kCpu);
  CHECK(parse_nproc("auto").kind == NprocSpec::Kind::kAuto);
  for (std::string bad : {"0", "-1", "abc", "", "1.5", "4x"}) CHECK_THROWS_AS(parse_nproc(bad), LaunchError);
}

TEST_CASE("nnodes is N or MIN:MAX with 0 < MIN <= MAX") {
  CHECK(parse_nnodes("2") == std::pair{2, 2});
  CHECK(parse_nnodes("1:4") == std::pair{1, 4});
  for (std::string bad : {"0", "3:2", "a", "1:2:3", "-1", ""}) CHECK_THROWS_AS(parse_nnodes(bad), LaunchError);
}

TEST_CASE("redirects and tee take a number or a per-rank map") {
  auto all = parse_stream_selection("--tee", "3");
  CHECK(all.for_rank(0) == 3);
  auto map = parse_stream_selection("--redirects", "0:1,1:2");
  CHECK(map.for_rank(0) == kStdout);
  CHECK(map.for_rank(1) == kStderr);
  CHECK(map.for_rank(2) == 0);
  auto wide = parse_stream_selection("--redirects", "12:3");  // torchrun allows one digit only
  CHECK(wide.for_rank(12) == 3);
  for (std::string bad : {"4", "x", "0:9", "0-1"}) CHECK_THROWS_AS(parse_stream_selection("--tee", bad), LaunchError);
}

TEST_CASE("device lists and rank filters are validated") {
  CHECK(parse_device_indices("0,2,5") == std::vector<int>{0, 2, 5});
  CHECK_THROWS_WITH(parse_device_indices("0,0"), Catch::Contains("twice"));
  for (std::string bad : {"a", "0,,1", "-1", "1.5", ""}) CHECK_THROWS_AS(parse_device_indices(bad), LaunchError);
  CHECK(parse_rank_filter("0,1") == std::set<int>{0, 1});
  CHECK_THROWS_AS(parse_rank_filter("x"), LaunchError);
}

TEST_CASE("signals to handle are names or numbers") {
  auto s = parse_signal_list("SIGTERM,USR1,2");
  CHECK(s.size() == 3);
  CHECK_THROWS_AS(parse_signal_list("SIGNOPE"), LaunchError);
  CHECK_THROWS_AS(parse_signal_list("SIGKILL"), LaunchError);
}

TEST_CASE("legacy launch mode passes --local_rank (1.x), or --local-rank when asked") {
  CHECK(parse({"--use-env=false", "prog"}).local_rank_flag == "--local_rank");
  CHECK(parse({"--use_env=0", "prog"}).local_rank_flag == "--local_rank");
  CHECK(parse({"--legacy-local-rank-arg", "prog"}).local_rank_flag == "--local_rank");
  CHECK(parse({"--use-env", "prog"}).local_rank_flag.empty());
  CHECK(parse({"--local-rank-arg=local-rank", "prog"}).local_rank_flag == "--local-rank");
  CHECK(parse({"--use-env=false", "--local_rank_arg=local_rank", "prog"}).local_rank_flag == "--local_rank");
  CHECK_THAT(usage_error_of({"--local-rank-arg=rank", "prog"}), Catch::Contains("local_rank"));
}

TEST_CASE("stdin rank option takes a rank or none or auto") {
  auto n = parse({"--stdin-rank=3", "prog"});
  CHECK_FALSE(n.stdin_rank_auto);
  CHECK(n.stdin_rank == 3);
  auto none = parse({"--stdin_rank", "none", "prog"});
  CHECK_FALSE(none.stdin_rank_auto);
  CHECK_FALSE(none.stdin_rank);
  CHECK(parse({"--stdin-rank=auto", "prog"}).stdin_rank_auto);
  CHECK_THAT(usage_error_of({"--stdin-rank=me", "prog"}), Catch::Contains("--stdin-rank"));
}

TEST_CASE("run-path option in both spellings and not with -m") {
  CHECK(parse({"--run-path", "train", "a"}).run_path);
  CHECK(parse({"--run_path", "train"}).run_path);
  CHECK_THAT(usage_error_of({"--run-path", "-m", "pkg"}), Catch::Contains("--run-path"));
}

TEST_CASE("bad input gives one actionable line") {
  CHECK_THAT(usage_error_of({"--bogus", "prog"}), Catch::Contains("unknown option '--bogus'"));
  CHECK_THAT(usage_error_of({}), Catch::Contains("no program given"));
  CHECK_THAT(usage_error_of({"--nproc-per-node=0", "prog"}), Catch::Contains("positive"));
  CHECK_THAT(usage_error_of({"--nproc-per-node=-2", "prog"}), Catch::Contains("--nproc-per-node"));
  CHECK_THAT(usage_error_of({"--nnodes=0", "prog"}), Catch::Contains("--nnodes"));
  CHECK_THAT(usage_error_of({"--master-port=70000", "prog"}), Catch::Contains("0 to 65535"));
  CHECK_THAT(usage_error_of({"--master-port=http", "prog"}), Catch::Contains("--master-port"));
  CHECK_THAT(usage_error_of({"--devices=1,x", "prog"}), Catch::Contains("--devices"));
  CHECK_THAT(usage_error_of({"--node-rank=2", "prog"}), Catch::Contains("--node-rank"));
  CHECK_THAT(usage_error_of({"-m", "--no-python", "prog"}), Catch::Contains("contradict"));
  CHECK_THAT(usage_error_of({"--shutdown-timeout=-1", "prog"}), Catch::Contains("--shutdown-timeout"));
  CHECK_THAT(usage_error_of({"--max-restarts=-1", "prog"}), Catch::Contains("--max-restarts"));
  CHECK_THAT(usage_error_of({"--nnodes=2", "--master-port=29500", "prog"}), Catch::Contains("--master-addr"));
  CHECK_THAT(usage_error_of({"--nnodes=1:2", "--master-addr=a", "prog"}), Catch::Contains("c10d"));
  CHECK_THAT(usage_error_of({"--nnodes=2", "--rdzv-backend=c10d", "prog"}), Catch::Contains("--rdzv-endpoint"));
  CHECK_THAT(usage_error_of({"--rdzv-conf=join_timeout=x", "prog"}), Catch::Contains("join_timeout"));
  CHECK_THAT(usage_error_of({"--rdzv-conf=heartbeat_timeout=soon", "prog"}), Catch::Contains("heartbeat_timeout"));
  CHECK_THAT(usage_error_of({"--rdzv-conf=heartbeat_interval=5,heartbeat_timeout=2", "prog"}),
             Catch::Contains("heartbeat_timeout must be longer"));
  CHECK_THAT(usage_error_of({"--rdzv-backend=zookeeper", "prog"}), Catch::Contains("static, c10d or etcd"));
  CHECK_THAT(usage_error_of({"--nnodes=2", "--rdzv-backend=etcd", "prog"}),
             Catch::Contains("--rdzv-endpoint=HOST[:PORT][,HOST[:PORT]...]"));
  CHECK_THAT(usage_error_of({"--rdzv-conf=password=hunter2", "prog"}), Catch::Contains("DDP_LAUNCH_ETCD_PASSWORD"));
  CHECK_THAT(usage_error_of({"--rdzv-conf=protocol=ftp", "prog"}), Catch::Contains("http or https"));
  CHECK_THAT(usage_error_of({"--rdzv-conf=cert=c.pem", "prog"}), Catch::Contains("cert= and key= go together"));
  CHECK_THAT(usage_error_of({"prog"}, {{"PET_NPROC_PER_NODE", "zero"}}), Catch::Contains("zero"));
}

TEST_CASE("help and version print and exit 0") {
  auto help = parse_command_line({"--help"}, {});
  CHECK_FALSE(help.options);
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.text, Catch::Contains("--nproc-per-node"));
  auto version = parse_command_line({"--version"}, {});
  CHECK_THAT(version.text, Catch::Contains("ddp-launch"));
}

TEST_CASE("static multi-node options") {
  auto o = parse({"--nnodes=2", "--node-rank=1", "--master-addr=10.0.0.1", "prog"});
  CHECK(o.nnodes_max == 2);
  CHECK(o.node_rank == 1);
  CHECK(o.node_rank_given);
  CHECK(o.master_addr == "10.0.0.1");
  CHECK(o.master_port == 29500);  // torchrun's default across nodes
  CHECK(is_multi_node(o));
  CHECK_FALSE(is_multi_node(parse({"prog"})));
}

TEST_CASE("dynamic rendezvous options and --rdzv-conf") {
  auto o = parse({"--nnodes=2:4", "--rdzv-backend=c10d", "--rdzv-endpoint=head:29400", "--rdzv-id=j",
                  "--rdzv-conf=join_timeout=20,last_call_timeout=2,heartbeat_interval=0.5,"
                  "heartbeat_timeout=2,token=s3cret,is_host=1,close_timeout=9",
                  "prog"});
  CHECK(o.nnodes_min == 2);
  CHECK(o.nnodes_max == 4);
  CHECK_FALSE(o.node_rank_given);
  CHECK(o.rdzv.join_timeout_s == 20);
  CHECK(o.rdzv.last_call_timeout_s == 2);
  CHECK(o.rdzv.heartbeat_interval_s == 0.5);
  CHECK(o.rdzv.heartbeat_timeout_s == 2);
  CHECK(o.rdzv.token == "s3cret");
  CHECK(o.rdzv.is_host == true);
  CHECK(parse({"prog"}, {{"DDP_LAUNCH_RDZV_TOKEN", "envtoken"}}).rdzv.token == "envtoken");
}

TEST_CASE("under Slurm the node count, node rank and master address come from the job") {
  Environment slurm{{"SLURM_NNODES", "4"}, {"SLURM_NODEID", "2"}, {"SLURM_JOB_NODELIST", "gpu[07-10]"}};
  auto o = parse({"--nproc-per-node=8", "prog"}, slurm);
  CHECK(o.nnodes_max == 4);
  CHECK(o.node_rank == 2);
  CHECK(o.master_addr == "gpu07");
  CHECK(o.master_port == 29500);
  auto explicit_flags = parse({"--nnodes=2", "--node-rank=1", "--master-addr=x", "prog"}, slurm);
  CHECK(explicit_flags.nnodes_max == 2);
  CHECK(explicit_flags.master_addr == "x");
}

TEST_CASE("hang timeout: auto by default (--hang-timeout), a number is a fixed limit, 0 is off") {
  CHECK(parse({"prog"}).hang_timeout_s == kHangTimeoutAuto);
  CHECK(parse({"--hang-timeout=45", "prog"}).hang_timeout_s == 45);
  CHECK(parse({"--hang-timeout=0", "prog"}).hang_timeout_s == 0);
  CHECK(parse({"prog"}, {{"PET_HANG_TIMEOUT", "20"}}).hang_timeout_s == 20);
}

TEST_CASE("etcd backend: torchrun's etcd-v2 name, TLS and auth keys, the password from the environment") {
  auto o = parse({"--nnodes=1:2", "--rdzv-backend=etcd-v2", "--rdzv-endpoint=e1:2379,e2",
                  "--rdzv-conf=protocol=https,cacert=/ca.pem,cert=/c.pem,key=/c.key,username=ddp", "prog"},
                 {{"DDP_LAUNCH_ETCD_PASSWORD", "pw"}});
  CHECK(o.rdzv_backend == RdzvBackend::kEtcd);
  CHECK(o.rdzv.https);
  CHECK(o.rdzv.cacert == "/ca.pem");
  CHECK(o.rdzv.cert == "/c.pem");
  CHECK(o.rdzv.key == "/c.key");
  CHECK(o.rdzv.username == "ddp");
  CHECK(o.rdzv.password == "pw");
  CHECK(o.warnings.empty());
  CHECK(parse({"--rdzv-conf=password_file=/run/pw", "prog"}).rdzv.password_file == "/run/pw");
}

TEST_CASE("rdzv endpoint is checked at parse time: one HOST[:PORT] for c10d and static, a list for etcd") {
  const std::vector<std::string> c10d = {"--nnodes=2", "--rdzv-backend=c10d"};
  auto with = [](std::vector<std::string> args, const std::string& endpoint) {
    args.push_back("--rdzv-endpoint=" + endpoint);
    args.push_back("prog");
    return args;
  };
  CHECK(parse(with(c10d, "head")).rdzv_endpoint == "head");
  CHECK(parse(with(c10d, "[::1]:29400")).rdzv_endpoint == "[::1]:29400");
  CHECK(parse(with({"--nnodes=2", "--rdzv-backend=etcd"}, "https://e1:2379/, e2,[::1]:2379")).rdzv_endpoint ==
        "https://e1:2379/, e2,[::1]:2379");
  // Refused with the flag's name and the value, --dry-run or not (the value is never left for later).
  for (const auto& first : {std::string("--dry-run"), std::string("--nproc-per-node=1")}) {
    std::vector<std::string> args = c10d;
    args.insert(args.begin(), first);
    CHECK_THAT(usage_error_of(with(args, "host:notaport")),
               Catch::StartsWith("--rdzv-endpoint: 'host:notaport' is not HOST[:PORT]") && Catch::Contains("1-65535"));
  }
  CHECK_THAT(usage_error_of(with(c10d, "a:29400,b:29400")), Catch::Contains("--rdzv-endpoint") &&
                                                                Catch::Contains("'a:29400,b:29400'") &&
                                                                Catch::Contains("only etcd takes a list"));
  CHECK_THAT(usage_error_of(with(c10d, "::1")), Catch::Contains("'::1'") && Catch::Contains("in brackets"));
  CHECK_THAT(usage_error_of(with(c10d, "https://head:29400")), Catch::Contains("no scheme://"));
  CHECK_THAT(usage_error_of(with({"--nnodes=2", "--rdzv-backend=etcd-v2"}, "e1:2379,e2:x")),
             Catch::Contains("--rdzv-endpoint: 'e2:x'") && Catch::Contains("HOST[:PORT][,HOST[:PORT]...]"));
  CHECK_THAT(usage_error_of(with({"--nnodes=2", "--rdzv-backend=etcd"}, " , ")),
             Catch::Contains("--rdzv-endpoint") && Catch::Contains("names no endpoint"));
  CHECK_THAT(usage_error_of(with({"--nnodes=2", "--rdzv-backend=etcd"}, "ftp://e1")),
             Catch::Contains("'ftp://e1'") && Catch::Contains("http:// or https://"));
  CHECK_THAT(usage_error_of(with({}, "head:0")), Catch::Contains("--rdzv-endpoint: 'head:0'"));  // static
  CHECK_THAT(usage_error_of({"prog"}, {{"PET_RDZV_ENDPOINT", "head:x"}}), Catch::Contains("--rdzv-endpoint: 'head:x'"));
}

TEST_CASE("worker store flag: --worker-store picks who hosts the workers' c10d store; a bad value names both choices") {
  CHECK(parse({"prog"}).launcher_worker_store);
  CHECK(parse({"--worker-store=launcher", "prog"}).launcher_worker_store);
  CHECK_FALSE(parse({"--worker_store", "rank0", "prog"}).launcher_worker_store);
  CHECK_FALSE(parse({"prog"}, {{"PET_WORKER_STORE", "rank0"}}).launcher_worker_store);
  const std::string error = usage_error_of({"--worker-store=agent", "prog"});
  CHECK_THAT(error,
             Catch::Contains("--worker-store 'agent'") && Catch::Contains("launcher") && Catch::Contains("rank0"));
}

TEST_CASE("persist flags: an interval without a folder, a bad interval") {
  CHECK_THAT(usage_error_of({"--snapshot-persist-interval=60", "prog"}),
             Catch::Contains("needs --snapshot-persist-dir"));
  CHECK_THAT(usage_error_of({"--snapshot-persist-dir=/d", "--snapshot-persist-interval=soon", "prog"}),
             Catch::Contains("--snapshot-persist-interval must be a number of seconds"));
  const auto o = cli::parse_command_line({"--snapshot_persist_dir=/d", "--snapshot-persist-interval=0", "prog"}, {});
  REQUIRE(o.options);
  CHECK(o.options->snapshot_persist_dir == "/d");
  CHECK(o.options->snapshot_persist_interval_s == 0);
  const auto env = cli::parse_command_line({"prog"}, {{"PET_SNAPSHOT_PERSIST_DIR", "/e"}});
  REQUIRE(env.options);
  CHECK(env.options->snapshot_persist_dir == "/e");
  CHECK(env.options->snapshot_persist_interval_s == 300);
}
