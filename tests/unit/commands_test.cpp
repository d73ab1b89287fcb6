// ddp-launch's commands as the command line chooses them: the first word alone names status,
// exec or __agent (a program of that name runs after a flag, as ./status, or after --), and
// the subcommands' arguments as CLI11 reads them (cli/status_args, cli/exec_args).
#include <catch2/catch.hpp>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/cli/command_line.hpp"
#include "launcher/cli/exec_args.hpp"
#include "launcher/cli/status_args.hpp"
#include "tests/unit/parse_helpers.hpp"

using namespace ddp::launch;
using namespace ddp::launch::cli;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using Args = std::vector<std::string>;

using cli::test::usage_error_of;

TEST_CASE("commands: the first word alone names a subcommand; anything else is a launch") {
  CHECK(split_command({"status", "h:1"}).command == Command::kStatus);
  CHECK(split_command({"status", "h:1"}).args == Args{"h:1"});
  CHECK(split_command({"exec", "--hosts", "a", "true"}).command == Command::kExec);
  CHECK(split_command({"__agent"}).command == Command::kAgent);
  CHECK(split_command({"__agent"}).args.empty());
  CHECK(split_command({"__nccl-probe", "8", "64"}).command == Command::kNcclProbe);
  CHECK(split_command({"__nccl-probe", "8", "64"}).args == Args{"8", "64"});
  for (const Args& launch : {Args{}, Args{"./status"}, Args{"--", "status"}, Args{"--standalone", "status"},
                             Args{"--nproc-per-node=2", "exec"}, Args{"train.py", "status"}}) {
    CHECK(split_command(launch).command == Command::kLaunch);
    CHECK(split_command(launch).args == launch);  // the launch parses the whole line
  }
}

TEST_CASE("status arguments: a target, --watch, --interval; help; what is unexpected") {
  auto s = parse_status_args({"h:1"});
  REQUIRE(s);
  CHECK(s->target == "h:1");
  CHECK_FALSE(s->watch);
  CHECK(s->interval_s == 2);
  s = parse_status_args({"--watch", "--interval", "0.5", "run/dir"});
  REQUIRE(s);
  CHECK(s->watch);
  CHECK(s->interval_s == 0.5);
  CHECK(s->target == "run/dir");
  s = parse_status_args({"-w", "-n", "3", "h:1"});
  REQUIRE(s);
  CHECK(s->interval_s == 3);
  CHECK(s->watch);
  CHECK_FALSE(parse_status_args({"--help"}));
  CHECK_FALSE(parse_status_args({"h:1", "-h"}));
  CHECK(usage_error_of([] { parse_status_args({}); }) == std::string("status: no target; ") + kStatusUsage);
  CHECK_THAT(usage_error_of([] { parse_status_args({"a", "b"}); }), StartsWith("status: unexpected 'b'; usage:"));
  CHECK_THAT(usage_error_of([] { parse_status_args({"--bogus", "a"}); }), StartsWith("status: unexpected '--bogus'"));
  CHECK(usage_error_of([] {
          parse_status_args({"a", "--interval", "0.01"});
        }) == "status --interval '0.01': seconds >= 0.1");
  CHECK_THAT(usage_error_of([] { parse_status_args({"a", "--interval", "-1"}); }), Contains("'-1'"));
}

TEST_CASE("exec arguments: the launch's host-list flags, CMD after the flags or after --") {
  auto e = parse_exec_args({"--hosts", "a,b", "--ssh-port=2222", "--ssh-option", "A=1", "--ssh_option", "B=2",
                            "--ssh-fanout", "4", "--exclude", "b", "echo", "--hosts", "x"});
  CHECK(e.hosts.hosts == "a,b");
  CHECK(*e.hosts.ssh_port == 2222);
  CHECK(e.hosts.ssh_options == Args{"A=1", "B=2"});
  CHECK(e.hosts.ssh_fanout == 4);
  CHECK(e.hosts.exclude == "b");
  CHECK(e.command == Args{"echo", "--hosts", "x"});  // CMD's own flags stay CMD's
  CHECK(parse_exec_args({"--hostfile", "f", "--", "--not-ours", "1"}).command == Args{"--not-ours", "1"});
  CHECK(parse_exec_args({"--hosts", "a", "-x"}).command == Args{"-x"});
  CHECK(usage_error_of([] { parse_exec_args({"--help"}); }) == kExecUsage);
  CHECK_THAT(usage_error_of([] { parse_exec_args({"--hosts", "a"}); }), StartsWith("exec: no command given; usage:"));
  CHECK_THAT(usage_error_of([] { parse_exec_args({"--", "true"}); }), StartsWith("exec: no hosts given; usage:"));
  CHECK_THAT(usage_error_of([] {
               parse_exec_args({"--bogus", "--hosts", "a", "true"});
             }),
             StartsWith("exec: unknown option '--bogus'; usage:"));
  // The launch's own flags for its agents are no exec flags.
  CHECK_THAT(usage_error_of([] {
               parse_exec_args({"--env-file", "e", "--hosts", "a", "true"});
             }),
             StartsWith("exec: unknown option '--env-file'"));
  CHECK_THAT(usage_error_of([] {
               parse_exec_args({"--ssh-port", "0", "--hosts", "a", "true"});
             }),
             Contains("--ssh-port") && Contains("1 to 65535"));
}
