// A many-host launch's pure parts: the hostfile formats (DeepSpeed, MPI, Horovod), --hosts,
// bad lines named by file and line, --include/--exclude in DeepSpeed's syntax, environment
// forwarding and --env-file, the agent plan (fixed and elastic) and its JSON line, the stop message and how a
// stop is told, ssh command lines, and the host-prefixed output with partial lines.
#include <catch2/catch.hpp>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/base/signal_names.hpp"
#include "launcher/cli/host_checks.hpp"
#include "launcher/cli/options.hpp"
#include "tests/unit/parse_helpers.hpp"
#include "launcher/many_hosts/plan/agent_plan.hpp"
#include "launcher/many_hosts/plan/env_forward.hpp"
#include "launcher/many_hosts/plan/host_item.hpp"
#include "launcher/many_hosts/plan/hostfile.hpp"
#include "launcher/many_hosts/plan/resource_filter.hpp"
#include "launcher/many_hosts/host_output.hpp"
#include "launcher/many_hosts/ssh_command.hpp"
#include "launcher/app/resolve_hosts_launch.hpp"
#include "launcher/app/resolve_job.hpp"

using namespace ddp::launch;
using Catch::Matchers::Contains;

using cli::test::usage_error_of;

namespace {

std::string names_and_slots(const std::vector<many_hosts::plan::HostEntry>& list) {
  std::string out;
  for (const auto& h : list) out += h.name + "=" + std::to_string(h.slots) + " ";
  return out;
}

std::string selection(const std::vector<many_hosts::plan::SelectedHost>& list) {
  std::string out;
  for (const auto& h : list) {
    out += h.name + ":";
    for (int s : h.selected) out += std::to_string(s);
    out += h.filtered ? "* " : " ";
  }
  return out;
}

}  // namespace

TEST_CASE("hostfile: DeepSpeed, MPI and Horovod lines, comments and blank lines") {
  const auto list = many_hosts::plan::parse_hostfile(
      "# the cluster\n"
      "worker-1 slots=4\n"
      "\n"
      "worker-2 slots=2 max_slots=8   # MPI\n"
      "  10.0.0.3:3\r\n"
      "worker-4\n"
      "worker-5 max_slots=2\n"
      "\tworker-6\tslots=1\n",
      "hf");
  CHECK(names_and_slots(list) == "worker-1=4 worker-2=2 10.0.0.3=3 worker-4=1 worker-5=2 worker-6=1 ");
  CHECK(list[0].line == 2);
  CHECK(list[2].line == 5);
}

TEST_CASE("hostfile: a bad line names the file, the line, and what to write") {
  auto err = [](const std::string& text) {
    return usage_error_of([&] { many_hosts::plan::parse_hostfile(text, "my.hosts"); });
  };
  CHECK_THAT(err("a slots=2\nb slots=x\n"),
             Contains("hostfile my.hosts:2: 'b slots=x'") && Contains("slots must be a whole number") &&
                 Contains("'host slots=N' (DeepSpeed)") && Contains("'host:N' (Horovod)"));
  CHECK_THAT(err("a slots=0"), Contains("my.hosts:1") && Contains("from 1 to"));
  CHECK_THAT(err("a gpus=2"), Contains("unknown key 'gpus' (known: slots, max_slots)"));
  CHECK_THAT(err("a slots"), Contains("'slots' is not KEY=VALUE"));
  CHECK_THAT(err("a:2 slots=2"), Contains("'host:N' takes nothing after it"));
  CHECK_THAT(err("a:"), Contains("the slot count after ':'"));
  CHECK_THAT(err("a slots=4 max_slots=2"), Contains("max_slots=2 is less than slots=4"));
  CHECK_THAT(err("a\n# c\nb\na slots=2\n"), Contains("my.hosts:4: host 'a' is already listed on line 1"));
  CHECK_THAT(err("# nothing\n\n"), Contains("hostfile my.hosts lists no host"));
}

TEST_CASE("host list: --hosts HOST[:SLOTS],...") {
  CHECK(names_and_slots(many_hosts::plan::parse_host_list("h1:4,h2,h3:2")) == "h1=4 h2=1 h3=2 ");
  CHECK_THAT(usage_error_of([] { many_hosts::plan::parse_host_list("h1:4,,h2"); }), Contains("an empty item"));
  CHECK_THAT(usage_error_of([] { many_hosts::plan::parse_host_list("h1,h1:2"); }),
             Contains("host 'h1' is listed twice"));
  CHECK_THAT(usage_error_of([] { many_hosts::plan::parse_host_list("h1:four"); }), Contains("the slot count"));
}

TEST_CASE("IPv6 hosts: in brackets with slots, bare before key=value words; ambiguous or unclosed is refused") {
  CHECK(names_and_slots(many_hosts::plan::parse_host_list("[::1]:2,[fd00::2]:2,[fd00::3],h4:1")) ==
        "::1=2 fd00::2=2 fd00::3=1 h4=1 ");
  CHECK(names_and_slots(many_hosts::plan::parse_hostfile("fd00::2 slots=2\n"
                                                         "[fd00::3] slots=3 max_slots=4\n"
                                                         "[fd00::4]:4\n"
                                                         "[fe80::1%ddpv]\n"
                                                         "fd00::5 max_slots=2  # MPI\n",
                                                         "hf")) ==
        "fd00::2=2 fd00::3=3 fd00::4=4 fe80::1%ddpv=1 fd00::5=2 ");
  auto list_err = [](const std::string& text) {
    return usage_error_of([&] { many_hosts::plan::parse_host_list(text); });
  };
  CHECK_THAT(list_err("[::1:4"), Contains("'[::1:4' has no closing ']'") && Contains("[ADDR]:SLOTS"));
  CHECK_THAT(list_err("::1:4"), Contains("'::1:4' has more than one ':'") && Contains("ambiguous") &&
                                    Contains("[ADDR]:SLOTS (e.g. [fd00::2]:4)"));
  CHECK_THAT(list_err("fd00::2"), Contains("ambiguous") && Contains("[ADDR]"));
  CHECK_THAT(list_err("[gpu1]:2"), Contains("'gpu1' in brackets is not an IPv6 address"));
  CHECK_THAT(list_err("[::1]4"), Contains("after '[::1]' comes ':'"));
  CHECK_THAT(list_err("[::1]:x"), Contains("the slot count"));
  CHECK_THAT(list_err("[::1]:2,[::1]"), Contains("host '[::1]' is listed twice"));
  auto file_err = [](const std::string& text) {
    return usage_error_of([&] { many_hosts::plan::parse_hostfile(text, "f"); });
  };
  CHECK_THAT(file_err("fd00::1:4\n"), Contains("hostfile f:1: 'fd00::1:4'") && Contains("[ADDR]:SLOTS"));
  CHECK_THAT(file_err("[fd00::1 slots=2\n"), Contains("has no closing ']'"));
  CHECK_THAT(file_err("gpu::1 slots=2\n"), Contains("ambiguous"));
  CHECK_THAT(file_err("[fd00::1]:2 slots=2\n"), Contains("'host:N' takes nothing after it"));

  const auto v6 = many_hosts::plan::parse_host_list("[fd00::1]:4,[fd00::2]:2,h3:1");
  CHECK(selection(many_hosts::plan::select_hosts(v6, "[fd00::1]:0,2@h3", "")) == "fd00::1:02* h3:0 ");
  CHECK(selection(many_hosts::plan::select_hosts(v6, "", "[fd00::2]")) == "fd00::1:0123 h3:0 ");
  CHECK(selection(many_hosts::plan::select_hosts(v6, "", "fd00::2")) == "fd00::1:0123 h3:0 ");  // a listed host, whole
  CHECK_THAT(usage_error_of([&] { many_hosts::plan::select_hosts(v6, "", "fd00::2:1"); }),
             Contains("ambiguous") && Contains("[fd00::2]:0,1"));
  CHECK_THAT(usage_error_of([&] { many_hosts::plan::select_hosts(v6, "[fd00::9]", ""); }),
             Contains("host '[fd00::9]' is not in the host list ([fd00::1], [fd00::2], h3)"));
  CHECK(many_hosts::plan::bracketed("fd00::1") == "[fd00::1]");
  CHECK(many_hosts::plan::bracketed("10.0.0.1") == "10.0.0.1");
  CHECK(many_hosts::plan::is_ipv6_address("fe80::1%eth0"));
  CHECK_FALSE(many_hosts::plan::is_ipv6_address("fe80::1%"));
  CHECK_FALSE(many_hosts::plan::is_ipv6_address("gpu1"));
}

TEST_CASE("resource filter: --include and --exclude, hosts and slots, DeepSpeed's syntax") {
  const auto list = many_hosts::plan::parse_host_list("h1:4,h2:2,h3:1");
  CHECK(selection(many_hosts::plan::select_hosts(list, "", "")) == "h1:0123 h2:01 h3:0 ");
  CHECK(selection(many_hosts::plan::select_hosts(list, "h1:0,2@h3", "")) == "h1:02* h3:0 ");
  CHECK(selection(many_hosts::plan::select_hosts(list, "h2", "")) == "h2:01 ");
  CHECK(selection(many_hosts::plan::select_hosts(list, "", "h2")) == "h1:0123 h3:0 ");
  CHECK(selection(many_hosts::plan::select_hosts(list, "", "h1:1@h3")) == "h1:023* h2:01 ");
  CHECK(selection(many_hosts::plan::select_hosts(list, "", "h2:0,1")) == "h1:0123 h3:0 ");
  CHECK_THAT(usage_error_of([&] { many_hosts::plan::select_hosts(list, "h1", "h2"); }),
             Contains("--include and --exclude contradict each other"));
  CHECK_THAT(usage_error_of([&] { many_hosts::plan::select_hosts(list, "h9", ""); }),
             Contains("--include 'h9': host 'h9' is not in the host list (h1, h2, h3)") && Contains("h1:0,2@h2"));
  CHECK_THAT(usage_error_of([&] { many_hosts::plan::select_hosts(list, "", "h2:2"); }),
             Contains("host 'h2' has slots 0-1, not 2"));
  CHECK_THAT(usage_error_of([&] { many_hosts::plan::select_hosts(list, "", "h1@h2@h3"); }), Contains("leaves no host"));
  CHECK_THAT(usage_error_of([&] { many_hosts::plan::select_hosts(list, "h1:x", ""); }),
             Contains("'x' is not a slot index"));
}

TEST_CASE("env forwarding: default prefixes, additions, never MASTER_/PET_, the env file wins") {
  const std::map<std::string, std::string> env{
      {"NCCL_DEBUG", "INFO"},        {"WANDB_PROJECT", "p"}, {"MASTER_ADDR", "x"}, {"PET_NNODES", "2"},
      {"CUDA_VISIBLE_DEVICES", "1"}, {"CUDA_HOME", "/c"},    {"MY_SETTING", "1"},  {"HOME", "/root"},
      {"PYTHONPATH", "/p"}};
  auto names = [](const std::map<std::string, std::string>& m) {
    std::string out;
    for (const auto& [k, v] : m) out += k + "=" + v + " ";
    return out;
  };
  CHECK(names(many_hosts::plan::forwarded_environment(env, many_hosts::plan::forward_prefixes(""), {})) ==
        "CUDA_HOME=/c NCCL_DEBUG=INFO PYTHONPATH=/p WANDB_PROJECT=p ");
  CHECK(names(many_hosts::plan::forwarded_environment(env, many_hosts::plan::forward_prefixes("MY_"),
                                                      {{"NCCL_DEBUG", "WARN"}})) ==
        "CUDA_HOME=/c MY_SETTING=1 NCCL_DEBUG=WARN PYTHONPATH=/p WANDB_PROJECT=p ");
  CHECK(names(many_hosts::plan::forwarded_environment(env, many_hosts::plan::forward_prefixes("none,HOME"), {})) ==
        "HOME=/root ");
  CHECK(many_hosts::plan::forward_prefixes("none").empty());
  CHECK_THAT(usage_error_of([] { many_hosts::plan::forward_prefixes("MASTER_"); }),
             Contains("MASTER_ is never forwarded"));
  CHECK_THAT(usage_error_of([] { many_hosts::plan::forward_prefixes("PET_NNODES"); }), Contains("never forwarded"));
  CHECK_THAT(usage_error_of([] { many_hosts::plan::forward_prefixes("A-B"); }),
             Contains("'A-B' is not a variable name"));
}

TEST_CASE("env file: KEY=VALUE lines, comments, export, quotes, and bad lines by number") {
  const auto pairs =
      many_hosts::plan::parse_env_file("# settings\nA=1\n\nexport B=\"two words\"\nC='x#y'\nD=\nE=a=b\r\n", "job.env");
  REQUIRE(pairs.size() == 5);
  CHECK(pairs[1] == std::make_pair(std::string("B"), std::string("two words")));
  CHECK(pairs[2].second == "x#y");
  CHECK(pairs[3].second.empty());
  CHECK(pairs[4].second == "a=b");
  CHECK_THAT(usage_error_of([] { many_hosts::plan::parse_env_file("A=1\nnot a pair\n", "job.env"); }),
             Contains("--env-file job.env:2: 'not a pair' is not KEY=VALUE"));
  CHECK_THAT(usage_error_of([] { many_hosts::plan::parse_env_file("MASTER_PORT=1\n", "job.env"); }),
             Contains("job.env:1: MASTER_PORT cannot be set this way"));
}

TEST_CASE("agent plan: node ranks in list order, workers from slots, the first host hosts the store") {
  const auto selected = many_hosts::plan::select_hosts(many_hosts::plan::parse_host_list("a:4,b:2,c:2"), "", "b:1");
  many_hosts::plan::PlanInputs in;
  in.is_local = [](const std::string& h) { return h == "b"; };
  const auto plan = many_hosts::plan::plan_agents(selected, in, std::nullopt);
  REQUIRE(plan.size() == 3);
  CHECK(plan[0].node_rank == 0);
  CHECK(plan[2].node_rank == 2);
  CHECK(plan[1].nnodes == 3);
  CHECK(*plan[0].nproc == 4);
  CHECK(*plan[1].nproc == 1);
  CHECK(plan[1].slots == std::vector<int>{0});
  CHECK(plan[0].slots.empty());
  CHECK(plan[2].master_addr == "a");
  CHECK(*plan[2].master_port == many_hosts::plan::kDefaultMasterPort);
  CHECK(plan[1].local);
  CHECK_FALSE(plan[0].local);

  in.nproc_given = true;
  in.master_addr_given = true;
  in.master_port = 29999;
  const auto given = many_hosts::plan::plan_agents(selected, in, 1);
  CHECK_FALSE(given[0].nproc);
  CHECK(given[0].master_addr.empty());
  CHECK(*given[0].master_port == 29999);
  CHECK_THAT(usage_error_of([&] { many_hosts::plan::plan_agents(selected, in, 2); }),
             Contains("--nproc-per-node 2 asks for more workers than the 1 slot(s) selected on host 'b'"));

  many_hosts::plan::PlanInputs plain;
  CHECK_THAT(usage_error_of([&] {
               many_hosts::plan::plan_agents(
                   many_hosts::plan::select_hosts(many_hosts::plan::parse_host_list("localhost:2,b:2"), "", ""), plain,
                   std::nullopt);
             }),
             Contains("the first host, 'localhost', hosts the job's store"));
  // One host alone: a single-node job there, no store address to set.
  const auto one = many_hosts::plan::plan_agents(
      many_hosts::plan::select_hosts(many_hosts::plan::parse_host_list("localhost:2"), "", ""), plain, std::nullopt);
  CHECK(one[0].master_addr.empty());
  CHECK_FALSE(one[0].master_port);
}

TEST_CASE("agent plan, elastic (--nnodes MIN:MAX): a c10d rendezvous at the first host unless one is given") {
  const auto selected =
      many_hosts::plan::select_hosts(many_hosts::plan::parse_host_list("[fd00::1]:2,b:2,c:2"), "", "");
  many_hosts::plan::PlanInputs in;
  in.nnodes_min = 2;
  in.nnodes_max = 3;
  const auto plan = many_hosts::plan::plan_agents(selected, in, std::nullopt);
  for (const auto& p : plan) {
    CHECK(p.nnodes_min == 2);
    CHECK(p.nnodes_max == 3);
    CHECK(p.rdzv_endpoint == "[fd00::1]:29500");
    CHECK(p.master_addr.empty());  // not a static rendezvous
    CHECK_FALSE(p.master_port);
  }
  in.master_port = 29400;
  in.master_addr_given = true;
  in.master_addr = "store-host";
  CHECK(many_hosts::plan::plan_agents(selected, in, std::nullopt)[1].rdzv_endpoint == "store-host:29400");
  in.rdzv_endpoint_given = true;  // the user's own c10d or etcd endpoint: passed through in the arguments
  CHECK(many_hosts::plan::plan_agents(selected, in, std::nullopt)[1].rdzv_endpoint.empty());

  many_hosts::plan::AgentConfig c;
  c.placement = plan[1];
  const many_hosts::plan::AgentConfig d =
      many_hosts::plan::decode_agent_config(many_hosts::plan::encode_agent_config(c));
  CHECK(d.placement.nnodes_min == 2);
  CHECK(d.placement.nnodes_max == 3);
  CHECK(d.placement.rdzv_endpoint == "[fd00::1]:29500");
  c.placement = many_hosts::plan::AgentPlacement{};  // fixed: no range, no endpoint on the line
  CHECK(many_hosts::plan::encode_agent_config(c).find("nnodes_range") == std::string::npos);
  CHECK(many_hosts::plan::decode_agent_config(many_hosts::plan::encode_agent_config(c)).placement.nnodes_min == 0);
}

TEST_CASE("agent configuration: one JSON line there and back; a foreign one is a clear error") {
  many_hosts::plan::AgentConfig c;
  c.args = {"--nproc-per-node", "2", "train", "--steps", "3 4", "'quoted'"};
  c.env = {{"NCCL_DEBUG", "INFO"}, {"X", "a\nb"}};
  c.settings = {{"PET_MAX_RESTARTS", "2"}};
  c.cwd = "/work dir";
  c.placement.host = "h2";
  c.placement.node_rank = 1;
  c.placement.nnodes = 2;
  c.placement.nproc = 2;
  c.placement.slots = {0, 2};
  c.placement.master_addr = "h1";
  c.placement.master_port = 29500;
  const std::string line = many_hosts::plan::encode_agent_config(c);
  CHECK(line.back() == '\n');
  CHECK(line.find('\n') == line.size() - 1);
  const many_hosts::plan::AgentConfig d = many_hosts::plan::decode_agent_config(line);
  CHECK(d.args == c.args);
  CHECK(d.env == c.env);
  CHECK(d.settings == c.settings);
  CHECK(d.cwd == c.cwd);
  CHECK(d.placement.host == "h2");
  CHECK(d.placement.slots == c.placement.slots);
  CHECK(*d.placement.nproc == 2);
  CHECK(*d.placement.master_port == 29500);
  CHECK_THAT(usage_error_of([] { many_hosts::plan::decode_agent_config("{\"version\": 99}"); }),
             Contains("version 99") && Contains("same ddp-launch version on every host"));
  CHECK_THAT(usage_error_of([] { many_hosts::plan::decode_agent_config("hello"); }),
             Contains("is not one this ddp-launch reads"));
}

TEST_CASE("stop message: the reason in one line after the configuration; anything else is no stop message") {
  const std::string line =
      many_hosts::plan::encode_stop_message("host h2 (node rank 1) was lost: its ssh session ended\n(x)");
  CHECK(line.find('\n') == line.size() - 1);
  CHECK(many_hosts::plan::decode_stop_message(line.substr(0, line.size() - 1)) ==
        "host h2 (node rank 1) was lost: its ssh session ended\n(x)");
  CHECK_FALSE(many_hosts::plan::decode_stop_message(""));
  CHECK_FALSE(many_hosts::plan::decode_stop_message("stop"));
  CHECK_FALSE(many_hosts::plan::decode_stop_message("{\"stop\": 3}"));
  CHECK_FALSE(many_hosts::plan::decode_stop_message("{\"later\": \"x\"}"));
}

TEST_CASE("stop note: a stop is told by its reason when one was given, else by its signal") {
  // The process-wide note itself is left alone here (other tests in this binary report stops).
  CHECK(stopped_how(15, std::nullopt) == " by SIGTERM");
  CHECK(stopped_how(15, std::string("host h2 (node rank 1) was lost")) == ": host h2 (node rank 1) was lost");
}

TEST_CASE("ssh command lines: ours that the launch needs first, the user's kept, a multiplexed session") {
  many_hosts::SshSettings s;
  s.port = 2222;
  s.options = {"IdentityFile=/k", "ControlPersist=30"};
  const auto master = many_hosts::ssh_master_argv(s, "h1", "/tmp/c/0");
  const std::string m = [&] {
    std::string out;
    for (const auto& a : master) out += a + " ";
    return out;
  }();
  CHECK(m.rfind("ssh -o BatchMode=yes -o ControlPath=/tmp/c/0 -o ControlMaster=yes -p 2222 -o IdentityFile=/k -o "
                "ControlPersist=30 -o ControlPersist=no ",
                0) == 0);  // theirs before our soft defaults: their ControlPersist=30 wins
  CHECK(master.back() == "h1");
  CHECK(master[master.size() - 3] == "-N");
  CHECK_THAT(m, !Contains(" -M "));  // -M with ControlMaster=yes means "ask", which BatchMode refuses
  const auto session = many_hosts::ssh_session_argv(s, "h1", "/tmp/c/0", "exec '/x y/ddp-launch' __agent");
  CHECK(session.back() == "exec '/x y/ddp-launch' __agent");
  CHECK(session[session.size() - 2] == "h1");
  CHECK(many_hosts::shell_quote("it's") == "'it'\\''s'");
}

TEST_CASE("host output: prefixes per line, partial lines at once, another host ends an open line") {
  many_hosts::HostOutput out(many_hosts::host_prefixes({"a", "bb"}));
  CHECK(many_hosts::host_prefixes({"a", "bb"})[0] == "[a]  ");
  CHECK(out.add(0, "one\ntwo") == "[a]  one\n[a]  two");
  CHECK(out.add(0, " more\n") == " more\n");
  CHECK(out.add(1, "10%\r20%") == "[bb] 10%\r[bb] 20%");
  CHECK(out.add(0, "x\n") == "\n[a]  x\n");  // bb's bar was open: a newline first
  CHECK(out.add(1, "\r30%\n") == "[bb] \r[bb] 30%\n");
  CHECK(out.add(1, "dos\r\n") == "[bb] dos\r\n");
  CHECK(out.add(0, "tail") == "[a]  tail");
  CHECK(out.finish(0) == "\n");
  CHECK(out.finish(1).empty());
}

TEST_CASE("host flags: parsed raw, --ssh-option repeatable with one value each, PROGRAM kept") {
  auto parsed = cli::parse_command_line(
      {"--hostfile", "h.txt", "--include", "a:0@b", "--ssh-option", "A=1", "--ssh-option", "B=2", "--ssh-port", "2222",
       "--env-forward", "MY_", "--env-file", "e.env", "train", "--epochs", "1"},
      {});
  REQUIRE(parsed.options);
  const cli::LaunchOptions& o = *parsed.options;
  CHECK(o.hosts.any());
  CHECK(o.hosts.hostfile == "h.txt");
  CHECK(o.hosts.include == "a:0@b");
  CHECK(o.hosts.ssh_options == std::vector<std::string>{"A=1", "B=2"});
  CHECK(*o.hosts.ssh_port == 2222);
  CHECK(o.hosts.env_forward == "MY_");
  CHECK(o.hosts.env_file == "e.env");
  CHECK(o.program == "train");
  CHECK(o.program_args == std::vector<std::string>{"--epochs", "1"});
  CHECK_FALSE(o.nproc_given);
  CHECK(cli::parse_command_line({"--nproc-per-node", "2", "x"}, {}).options->nproc_given);
  CHECK_FALSE(cli::parse_command_line({"x"}, {}).options->hosts.any());
}

TEST_CASE("resolve_hosts_launch: the host flags' cross-checks, then the plan's inputs from what was given") {
  auto resolve = [](std::vector<std::string> args, const cli::Environment& env = {}) {
    args.insert(args.begin(), {"--hosts", "a,b"});
    args.push_back("prog");
    auto parsed = cli::parse_command_line(args, env);
    REQUIRE(parsed.options);
    return resolve_hosts_launch(*parsed.options, env);
  };
  CHECK_THAT(usage_error_of([&] { resolve({"--nnodes=2"}); }), Contains("drop --nnodes"));
  CHECK_THAT(usage_error_of([&] { resolve({"--node-rank=0"}); }), Contains("drop --node-rank"));
  CHECK_THAT(usage_error_of([&] { resolve({"--dry-run"}); }), Contains("--dry-run shows one node"));
  CHECK_THAT(usage_error_of([&] { resolve({"--standalone"}); }), Contains("drop it with --hostfile/--hosts"));
  CHECK_THAT(usage_error_of([&] { resolve({"--rdzv-backend=etcd"}); }), Contains("etcd's client addresses"));

  const many_hosts::HostsLaunchSpec plain = resolve({});
  CHECK_FALSE(plain.elastic);
  CHECK_FALSE(plain.plan.master_addr_given);  // the launcher picks the store: the first host
  CHECK_FALSE(plain.plan.rdzv_endpoint_given);
  CHECK_FALSE(plain.plan.nproc_given);
  CHECK(plain.nproc_count == 1);  // the default count: plan_agents checks it against a slot filter
  CHECK(plain.plan.nnodes_min == 0);
  CHECK(plain.stop_deadline_s == 60);
  // An explicit --master-addr is given, whatever its value (the default's value included).
  CHECK(resolve({"--master-addr=127.0.0.1"}).plan.master_addr_given);
  CHECK(resolve({"--master-addr=store"}).plan.master_addr == "store");

  const many_hosts::HostsLaunchSpec s =
      resolve({"--nnodes=1:3", "--nproc-per-node=4", "--rdzv-backend=c10d", "--rdzv-endpoint=r:1", "--ssh-port=2222",
               "--shutdown-timeout=5"},
              {{"PET_MAX_RESTARTS", "2"}, {"PET_EMPTY", ""}, {"PATH", "/p"}, {"HOME", "/h"}});
  CHECK(s.elastic);
  CHECK(s.plan.nnodes_min == 1);
  CHECK(s.plan.nnodes_max == 3);
  CHECK(s.plan.nproc_given);
  CHECK(s.nproc_count == 4);
  CHECK(s.plan.rdzv_endpoint_given);
  CHECK(*s.ssh.port == 2222);
  CHECK(s.settings == std::map<std::string, std::string>{{"PET_MAX_RESTARTS", "2"}});
  CHECK(s.path_env == "/p");
  CHECK(s.stop_deadline_s == 35);
}

TEST_CASE("hosts launch size: an elastic job asks for at most as many nodes as there are hosts") {
  CHECK_NOTHROW(cli::check_hosts_launch_size(1, 3, 3));
  CHECK_NOTHROW(cli::check_hosts_launch_size(1, 1, 0));  // not elastic: the host list sets the count
  CHECK_THAT(usage_error_of([] { cli::check_hosts_launch_size(1, 3, 2); }),
             Contains("--nnodes 1:3 asks for up to 3 node(s), and the host list has 2"));
}

TEST_CASE("placed options: an agent's placement over the flags' own, the parsed options untouched") {
  auto flags = [](std::vector<std::string> args) {
    args.insert(args.begin(), {"--hosts", "h0,h1,h2"});
    args.push_back("prog");
    auto parsed = cli::parse_command_line(args, {});
    REQUIRE(parsed.options);
    return *parsed.options;
  };
  many_hosts::plan::AgentPlacement fixed;
  fixed.host = "h2";
  fixed.node_rank = 2;
  fixed.nnodes = 3;
  fixed.nproc = 2;
  fixed.master_addr = "h0";
  fixed.master_port = 29500;
  const cli::LaunchOptions given = flags({"--stdin-rank=0"});
  const cli::LaunchOptions o = placed_options(given, fixed);
  CHECK(o.nnodes_min == 3);
  CHECK(o.nnodes_max == 3);
  CHECK(o.node_rank == 2);
  CHECK(o.node_rank_given);
  CHECK(o.nproc.kind == cli::NprocSpec::Kind::kCount);
  CHECK(o.nproc.count == 2);
  CHECK(o.master_addr == "h0");
  CHECK(o.master_port == 29500);
  CHECK(o.local_addr == "h2");  // the host as listed: what the others reach it by
  CHECK_FALSE(o.stdin_rank_auto);
  CHECK_FALSE(o.stdin_rank);  // stdin is the launching machine's channel
  CHECK(o.program == "prog");
  CHECK(given.nnodes_max == 1);  // the parse's own options stay as parsed
  CHECK(given.stdin_rank == 0);

  CHECK(placed_options(flags({"--local-addr=10.0.0.2"}), fixed).local_addr == "10.0.0.2");
  fixed.host = "localhost";
  CHECK(placed_options(flags({}), fixed).local_addr.empty());

  many_hosts::plan::AgentPlacement elastic;
  elastic.host = "h1";
  elastic.node_rank = 1;
  elastic.nnodes = 3;
  elastic.nnodes_min = 1;
  elastic.nnodes_max = 3;
  elastic.rdzv_endpoint = "[fd00::1]:29500";
  const cli::LaunchOptions e = placed_options(flags({"--nnodes=1:3"}), elastic);
  CHECK(e.nnodes_min == 1);
  CHECK(e.nnodes_max == 3);
  CHECK_FALSE(e.node_rank_given);  // the rendezvous numbers the nodes
  CHECK(e.rdzv_backend == cli::RdzvBackend::kC10d);
  REQUIRE(e.rdzv_endpoints.size() == 1);
  CHECK(e.rdzv_endpoints[0].address.host == "fd00::1");
  CHECK(e.rdzv_endpoints[0].address.port == 29500);
  CHECK_FALSE(e.nproc_given);
}
