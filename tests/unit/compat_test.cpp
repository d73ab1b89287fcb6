// torchrun and cluster compatibility: flag prefixes, quoted --rdzv-conf, --logs-specs,
// PET_* as Kubernetes operators set them, JOB_COMPLETION_INDEX, mpirun/PMI placement, the
// --local_rank a script declares, the `waiting for DNS` schedule and the wait for several names.
#include <catch2/catch.hpp>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/cli/flag_prefix.hpp"
#include "launcher/cli/mpi_env.hpp"
#include "launcher/cli/options.hpp"
#include "launcher/cli/rendezvous_conf.hpp"
#include "launcher/rendezvous/dns_wait.hpp"
#include "launcher/worker/script_local_rank.hpp"
#include "parse_helpers.hpp"

using namespace ddp::launch;
using namespace ddp::launch::cli;
using ddp::launch::cli::test::parse;
using ddp::launch::cli::test::usage_error_of;

namespace {

bool has_notice(const LaunchOptions& o, const std::string& part) {
  for (const auto& n : o.notices)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("unambiguous prefixes of long flags are spelled out, as argparse does") {
  auto o = parse({"--redirect=3", "--nproc=2", "--max-r", "4", "--no-p", "prog", "--redirect=1"});
  CHECK(o.redirects.all == 3);
  CHECK(o.nproc.count == 2);
  CHECK(o.max_restarts == 4);
  CHECK(o.no_python);
  CHECK(o.program_args == std::vector<std::string>{"--redirect=1"});  // the program's own flags untouched
  CHECK(parse({"--nproc_per=3", "prog"}).nproc.count == 3);
  CHECK(parse({"--rdzv-i", "job7", "prog"}).rdzv_id == "job7");
}

TEST_CASE("an ambiguous prefix is an error that lists the candidates") {
  const std::string e = usage_error_of({"--rdzv=x", "prog"});
  CHECK_THAT(e, Catch::Contains("--rdzv is ambiguous"));
  CHECK_THAT(e, Catch::Contains("--rdzv-backend"));
  CHECK_THAT(e, Catch::Contains("--rdzv-endpoint"));
  CHECK_THAT(usage_error_of({"--no", "prog"}), Catch::Contains("--no-python"));
}

TEST_CASE("expand_flag_prefixes stops at PROGRAM and skips flag values") {
  const std::vector<FlagNames> flags = {
      {{"nproc-per-node", "nproc_per_node"}, "", true}, {{"tee"}, "t", true}, {{"module"}, "m", false}};
  CHECK(expand_flag_prefixes(flags, {"--npr", "--tee", "-t", "3", "--mod", "p", "--npr"}) ==
        std::vector<std::string>{"--nproc-per-node", "--tee", "-t", "3", "--module", "p", "--npr"});
  CHECK(expand_flag_prefixes(flags, {"--", "--npr"}) == std::vector<std::string>{"--", "--npr"});
  CHECK(expand_flag_prefixes(flags, {"--zzz", "p"}) == std::vector<std::string>{"--zzz", "p"});
}

TEST_CASE("rdzv-conf: the quotes a Kubernetes args list keeps are dropped") {
  auto o = parse({"--rdzv-conf='join_timeout=5,last_call_timeout=1,timeout=5'", "prog"});
  CHECK(o.rdzv.join_timeout_s == 5);
  CHECK(o.rdzv.last_call_timeout_s == 1);
  CHECK(has_notice(o, "without its quotes"));
  auto each = parse_rdzv_conf("\"join_timeout=7\",last_call_timeout='2'", {});
  CHECK(each.join_timeout_s == 7);
  CHECK(each.last_call_timeout_s == 2);
  CHECK(each.quotes_stripped);
  CHECK_FALSE(parse_rdzv_conf("join_timeout=7", {}).quotes_stripped);
  CHECK(parse({"--rdzv-conf=join_timeout=5", "prog"}).notices.empty());
  // A quote without its match is not a shell's: kept, so the key is unknown (and warned of).
  CHECK(parse_rdzv_conf("'join_timeout=5", {}).ignored_keys == std::vector<std::string>{"'join_timeout"});
}

TEST_CASE("logs-specs: the default layout, or a clear error for a plug-in") {
  CHECK(parse({"--logs-specs=default", "prog"}).program == "prog");
  CHECK(parse({"--logs_specs", "default", "prog"}).program == "prog");
  CHECK_THAT(usage_error_of({"--logs_specs=DOESNOT_EXIST", "prog"}),
             Catch::Contains("cannot load torchrun.logs_specs"));
}

TEST_CASE("PET_* as Kubeflow's operators set them") {
  // PyTorchJob v1, elastic.
  auto o = parse({"prog"}, {{"PET_NNODES", "1:3"},
                            {"PET_NPROC_PER_NODE", "auto"},
                            {"PET_RDZV_BACKEND", "c10d"},
                            {"PET_RDZV_ENDPOINT", "job-master-0:23456"},
                            {"PET_RDZV_ID", "job"},
                            {"PET_STANDALONE", ""}});
  CHECK(o.nnodes_min == 1);
  CHECK(o.nnodes_max == 3);
  CHECK(o.nproc.kind == NprocSpec::Kind::kAuto);
  CHECK(o.rdzv_endpoint == "job-master-0:23456");
  CHECK_FALSE(o.standalone);
  // Static.
  auto s = parse({"prog"}, {{"PET_NNODES", "2"},
                            {"PET_NODE_RANK", "1"},
                            {"PET_NPROC_PER_NODE", "gpu"},
                            {"PET_MASTER_ADDR", "job-master-0"},
                            {"PET_MASTER_PORT", "23456"}});
  CHECK(s.nnodes_max == 2);
  CHECK(s.node_rank == 1);
  CHECK(s.nproc.kind == NprocSpec::Kind::kGpu);
  CHECK(s.master_addr == "job-master-0");
  CHECK(s.master_port == 23456);
  CHECK(parse({"prog"}, {{"PET_NPROC_PER_NODE", "cpu"}}).nproc.kind == NprocSpec::Kind::kCpu);
  CHECK(parse({"prog"}, {{"PET_STANDALONE", "1"}}).standalone);
}

TEST_CASE("JOB_COMPLETION_INDEX is the node rank when nothing else gives one") {
  const Environment env = {{"JOB_COMPLETION_INDEX", "1"}, {"PET_NNODES", "2"}, {"PET_MASTER_ADDR", "h0"}};
  auto o = parse({"prog"}, env);
  CHECK(o.node_rank == 1);
  CHECK(o.node_rank_given);
  CHECK(has_notice(o, "node rank 1 from JOB_COMPLETION_INDEX"));
  CHECK(parse({"--node-rank=0", "prog"}, env).node_rank == 0);  // a flag wins
  CHECK_THAT(usage_error_of({"prog"}, {{"JOB_COMPLETION_INDEX", "x"}}), Catch::Contains("JOB_COMPLETION_INDEX"));
}

TEST_CASE("in a Kubernetes pod the stop grace fits the default 30 s termination grace period") {
  CHECK(parse({"prog"}).shutdown_timeout_s == 30);
  CHECK(parse({"prog"}, {{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}}).shutdown_timeout_s == 20);
  CHECK(parse({"--shutdown-timeout=40", "prog"}, {{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}}).shutdown_timeout_s == 40);
}

TEST_CASE("mpirun and PMI tasks: rank and size of each convention") {
  auto ompi =
      mpi_task({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}});
  REQUIRE(ompi);
  CHECK(ompi->rank == 1);
  CHECK(ompi->size == 4);
  CHECK(ompi->tasks_on_this_node == 1);
  CHECK_THAT(ompi->source, Catch::Contains("Open MPI"));
  auto pmi = mpi_task({{"PMI_RANK", "2"}, {"PMI_SIZE", "3"}, {"MPI_LOCALNRANKS", "2"}});
  REQUIRE(pmi);
  CHECK(pmi->rank == 2);
  CHECK(pmi->tasks_on_this_node == 2);
  auto pmix = mpi_task({{"PMIX_RANK", "0"}, {"PMIX_SIZE", "2"}});
  REQUIRE(pmix);
  CHECK_THAT(pmix->source, Catch::Contains("PMIx"));
  CHECK_FALSE(mpi_task({{"PMIX_RANK", "0"}}));  // no size: nothing to place by
  CHECK_FALSE(mpi_task({}));
  CHECK_THROWS_AS(mpi_task({{"PMI_RANK", "3"}, {"PMI_SIZE", "3"}}), LaunchError);
  CHECK_THROWS_AS(mpi_task({{"PMI_RANK", "a"}, {"PMI_SIZE", "3"}}), LaunchError);
}

TEST_CASE("under mpirun the task's rank and size place the node, and it says so") {
  const Environment env = {{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}};
  auto o = parse({"--master-addr=10.0.0.1", "prog"}, env);
  CHECK(o.nnodes_max == 2);
  CHECK(o.node_rank == 1);
  CHECK(has_notice(o, "node rank 1 of 2 from Open MPI"));
  // Explicit placement wins; Slurm's variables are not read under mpirun.
  CHECK(parse({"--nnodes=1", "prog"}, env).nnodes_max == 1);
  Environment slurm = env;
  slurm.insert({{"SLURM_NNODES", "3"}, {"SLURM_NODEID", "0"}, {"SLURM_JOB_NODELIST", "n[1-3]"}});
  CHECK(parse({"--master-addr=10.0.0.1", "prog"}, slurm).nnodes_max == 2);
  // Two tasks on one node would share its GPUs: an error, unless the whole job is on loopback.
  Environment two = env;
  two["OMPI_COMM_WORLD_LOCAL_SIZE"] = "2";
  CHECK_THAT(usage_error_of({"--master-addr=10.0.0.1", "prog"}, two), Catch::Contains("one per node"));
  CHECK(parse({"--master-addr=127.0.0.1", "prog"}, two).node_rank == 1);
}

TEST_CASE("a script's declared --local_rank spelling") {
  using worker::declared_local_rank_flag;
  CHECK(declared_local_rank_flag("p.add_argument(\"--local_rank\", type=int)") == "--local_rank");
  CHECK(declared_local_rank_flag("p.add_argument(\n  '--local-rank', '--local_rank', type=int)") == "--local-rank");
  CHECK(declared_local_rank_flag("p.add_argument('--fail')\np.add_argument('-l', \"--local_rank\")") == "--local_rank");
  CHECK(declared_local_rank_flag("# p.add_argument('--local_rank')\nx = 1") == "");
  CHECK(declared_local_rank_flag("p.add_argument('--rank', help='not --local_rank')") == "");
  CHECK(declared_local_rank_flag("os.environ['LOCAL_RANK']") == "");
}

TEST_CASE("which file is the Python script") {
  using worker::python_script_of;
  auto spec = [](std::string program, std::vector<std::string> args, bool module = false, bool run_path = false) {
    worker::WorkerCommandSpec s;
    s.program = std::move(program);
    s.args = std::move(args);
    s.module = module;
    s.run_path = run_path;
    return s;
  };
  auto direct = python_script_of(spec("train.py", {"--x"}));
  REQUIRE(direct);
  CHECK(direct->path == "train.py");
  CHECK(direct->arg_index == -1);
  auto through = python_script_of(spec("/usr/bin/python3.11", {"-u", "-W", "ignore", "t.py", "a"}));
  REQUIRE(through);
  CHECK(through->path == "t.py");
  CHECK(through->arg_index == 3);
  CHECK_FALSE(python_script_of(spec("python3", {"-m", "pkg"})));
  CHECK_FALSE(python_script_of(spec("pkg.mod", {}, true)));
  CHECK_FALSE(python_script_of(spec("./train", {"x.py"})));
  CHECK(python_script_of(spec("script", {}, false, true)));  // --run-path
}

TEST_CASE("the --local_rank auto mode follows --use-env and --local-rank-arg") {
  CHECK(parse({"prog.py"}).local_rank_auto);
  CHECK_FALSE(parse({"--use-env", "prog.py"}).local_rank_auto);
  CHECK_FALSE(parse({"--use_env=False", "prog.py"}).local_rank_auto);
  CHECK_FALSE(parse({"--local-rank-arg=local-rank", "prog.py"}).local_rank_auto);
  CHECK_FALSE(parse({"prog.py"}, {{"PET_USE_ENV", "1"}}).local_rank_auto);
}

TEST_CASE("`waiting for DNS` lines: after 1 s, then every 5 s") {
  using rendezvous::dns_notice_due;
  CHECK_FALSE(dns_notice_due(0.4, -1));
  CHECK(dns_notice_due(1.0, -1));
  CHECK_FALSE(dns_notice_due(5.9, 1.0));
  CHECK(dns_notice_due(6.0, 1.0));
}

TEST_CASE("DNS wait for several names (etcd's members): done when one is an address or resolves; else all named") {
  using rendezvous::wait_for_dns;
  CHECK(wait_for_dns(std::vector<std::string>{"no-such-member.invalid", "127.0.0.1"}, 0, nullptr) == 0);
  CHECK(wait_for_dns(std::vector<std::string>{"no-such-member.invalid", "localhost"}, 5, nullptr) == 0);
  try {
    wait_for_dns(std::vector<std::string>{"a.invalid", "b.invalid"}, 0, nullptr);
    FAIL("expected the wait to give up");
  } catch (const LaunchError& e) {
    CHECK(e.exit_code() == exit_code::kRendezvousFailed);
    CHECK_THAT(e.what(), Catch::Contains("the rendezvous hosts a.invalid, b.invalid did not resolve within 0 s") &&
                             Catch::Contains("a.invalid: ") && Catch::Contains("PET_RDZV_ENDPOINT"));
  }
}
