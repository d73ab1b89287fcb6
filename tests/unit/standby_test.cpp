// Warm restarts' pure parts: the handoff codec (contract/standby_handoff.hpp), the standby
// plan's decisions (which kind, the standby's argv, who may adopt what, when to give up),
// the flags (--warm-restarts, --no-warm-restarts, --preload), and the docs' event rows.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include "contract/progress_file.hpp"
#include "contract/standby_handoff.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/cli/options.hpp"
#include "launcher/warm/standby_plan.hpp"
#include "tests/support/test_support.hpp"

using namespace ddp::launch;
using namespace ddp::launch::warm;
using ddp::test::TempDir;

namespace {

std::string payload_of(const std::string& frame) { return frame.substr(4); }

StandbyRequest python_request() {
  return {true, 1, "train.py", "/usr/bin/python3", {"python3", "-u", "train.py", "--lr=1"}, false, {"numpy"}};
}

cli::LaunchOptions parse(const std::vector<std::string>& args, const cli::Environment& env = {}) {
  auto parsed = cli::parse_command_line(args, env);
  REQUIRE(parsed.options);
  return *parsed.options;
}

}  // namespace

TEST_CASE("standby handoff: a frame decodes to what was encoded") {
  ddp::standby::Handoff h{{"python3", "-u", "train.py", std::string("a\0b", 3), ""},
                          {"RANK=3", "EMPTY=", "MULTI=x=y"},
                          "/work/dir with spaces"};
  const std::string frame = ddp::standby::encode_handoff(h);
  REQUIRE(ddp::standby::payload_length(frame.substr(0, 4)) == frame.size() - 4);
  std::string error;
  auto back = ddp::standby::decode_handoff(payload_of(frame), &error);
  INFO(error);
  REQUIRE(back);
  CHECK(back->argv == h.argv);
  CHECK(back->env == h.env);
  CHECK(back->cwd == h.cwd);
}

TEST_CASE("standby prepare: magic DDPS, the version, the worker's argv") {
  const std::vector<std::string> argv{"python3", "-u", "train.py", "--lr=1"};
  const std::string frame = ddp::standby::encode_prepare(argv);
  REQUIRE(ddp::standby::payload_length(frame.substr(0, 4)) == frame.size() - 4);
  const std::string payload = payload_of(frame);
  ddp::standby::detail::Reader r(payload);
  CHECK(r.bytes(4) == "DDPS");
  CHECK(static_cast<uint8_t>(r.bytes(1)[0]) == ddp::standby::kVersion);
  CHECK(r.list() == argv);
  CHECK((r.ok() && r.at_end()));
  std::string error;  // never taken for a handoff
  CHECK_FALSE(ddp::standby::decode_handoff(payload, &error));
  CHECK_THAT(error, Catch::Contains("magic"));
}

TEST_CASE("standby handoff: malformed payloads are refused with a reason") {
  const std::string good = payload_of(ddp::standby::encode_handoff({{"prog"}, {"A=1"}, "/"}));
  std::string error;
  CHECK_FALSE(ddp::standby::decode_handoff("XXXX", &error));
  CHECK_THAT(error, Catch::Contains("magic"));
  std::string other_version = good;
  other_version[4] = 2;
  CHECK_FALSE(ddp::standby::decode_handoff(other_version, &error));
  CHECK_THAT(error, Catch::Contains("version"));
  for (size_t cut = 5; cut < good.size(); ++cut) {
    INFO(cut);
    CHECK_FALSE(ddp::standby::decode_handoff(good.substr(0, cut), &error));
  }
  CHECK_FALSE(ddp::standby::decode_handoff(good + "x", &error));
  CHECK_THAT(error, Catch::Contains("trailing"));
  CHECK_FALSE(ddp::standby::decode_handoff(payload_of(ddp::standby::encode_handoff({{}, {}, "/"})), &error));
  CHECK_THAT(error, Catch::Contains("argv"));
  std::string huge_count = good.substr(0, 5) + std::string("\xff\xff\xff\x7f", 4);  // 2^31 argv items, no bytes
  CHECK_FALSE(ddp::standby::decode_handoff(huge_count, &error));
  std::string too_long;
  for (int i = 0; i < 4; ++i)
    too_long.push_back(static_cast<char>(((ddp::standby::kMaxPayload + 1) >> (8 * i)) & 0xff));
  CHECK_FALSE(ddp::standby::payload_length(too_long));
}

TEST_CASE("standby plan: Python scripts and modules get Python standbys") {
  CHECK(plan_standbys(python_request()).kind == StandbyKind::kPython);
  StandbyRequest module = python_request();
  module.argv = {"python3", "-u", "-m", "pkg.train", "x"};
  CHECK(plan_standbys(module).kind == StandbyKind::kPython);
  CHECK(plan_standbys(module).preload == std::vector<std::string>{"numpy"});
  StandbyRequest c = python_request();
  c.argv = {"python3", "-c", "print(1)"};
  const StandbyPlan none = plan_standbys(c);
  CHECK(none.kind == StandbyKind::kNone);
  CHECK_THAT(none.cold_reason, Catch::Contains("restarts are cold"));
}

TEST_CASE("standby plan: a native program needs libddp's marker, otherwise one reason") {
  StandbyRequest native{true, 2, "./prog", "./prog", {"./prog", "--x"}, true, {}};
  CHECK(plan_standbys(native).kind == StandbyKind::kNative);
  native.has_hook_marker = false;
  const StandbyPlan cold = plan_standbys(native);
  CHECK(cold.kind == StandbyKind::kNone);
  CHECK_THAT(cold.cold_reason, Catch::Contains("a Python script or a program linked with libddp; ./prog is neither"));
}

TEST_CASE("standby plan: no restarts or --no-warm-restarts: no standby and no notice") {
  StandbyRequest r = python_request();
  r.max_restarts = 0;
  CHECK(plan_standbys(r).kind == StandbyKind::kNone);
  CHECK(plan_standbys(r).cold_reason.empty());
  r = python_request();
  r.warm_restarts = false;
  CHECK(plan_standbys(r).kind == StandbyKind::kNone);
  CHECK(plan_standbys(r).cold_reason.empty());
}

TEST_CASE("standby argv: the same interpreter and flags running the bootstrap") {
  StandbyPlan python{StandbyKind::kPython, "", {}};
  CHECK(standby_argv(python, {"python3", "-u", "-X", "dev", "t.py", "a"}, "BOOT") ==
        std::vector<std::string>{"python3", "-u", "-X", "dev", "-c", "BOOT"});
  CHECK(standby_argv(python, {"python3", "-u", "-m", "mod"}, "BOOT") ==
        std::vector<std::string>{"python3", "-u", "-c", "BOOT"});
  StandbyPlan native{StandbyKind::kNative, "", {}};
  CHECK(standby_argv(native, {"./train", "--epochs=2"}, "BOOT") == std::vector<std::string>{"./train", "--epochs=2"});
}

TEST_CASE("adoptable: Python takes any script with the same interpreter and flags, native the same argv") {
  StandbyPlan python{StandbyKind::kPython, "", {}};
  os::SpawnSpec spawn;
  spawn.executable = "/usr/bin/python3";
  spawn.argv = {"python3", "-u", "other.py", "--new-arg"};
  CHECK(adoptable(python, "/usr/bin/python3", {"python3", "-u", "t.py"}, spawn));
  CHECK_FALSE(adoptable(python, "/usr/bin/python3.9", {"python3", "-u", "t.py"}, spawn));
  CHECK_FALSE(adoptable(python, "/usr/bin/python3", {"python3", "-u", "-O", "t.py"}, spawn));
  StandbyPlan native{StandbyKind::kNative, "", {}};
  spawn.executable = "./train";
  spawn.argv = {"./train", "--local_rank=1"};
  CHECK(adoptable(native, "./train", {"./train", "--local_rank=1"}, spawn));
  CHECK_FALSE(adoptable(native, "./train", {"./train", "--local_rank=0"}, spawn));
  CHECK_FALSE(adoptable(StandbyPlan{}, "./train", {"./train", "--local_rank=1"}, spawn));
}

TEST_CASE("adoptable: a prepared Python standby (run up to the standby point) takes only its own argv") {
  StandbyPlan python{StandbyKind::kPython, "", {}};
  os::SpawnSpec spawn;
  spawn.executable = "/usr/bin/python3";
  spawn.argv = {"python3", "-u", "train.py", "--lr=1"};
  CHECK(adoptable(python, "/usr/bin/python3", spawn.argv, spawn, true));
  CHECK_FALSE(adoptable(python, "/usr/bin/python3", {"python3", "-u", "train.py", "--lr=2"}, spawn, true));
  CHECK_FALSE(adoptable(python, "/usr/bin/python3", {"python3", "-u", "other.py", "--lr=1"}, spawn, true));
  CHECK(adoptable(python, "/usr/bin/python3", {"python3", "-u", "other.py", "--lr=1"}, spawn, false));
}

TEST_CASE("standby point: the features a worker shows before it feeds its progress record are read") {
  TempDir dir;
  const std::string path = dir / "progress";
  CHECK(ddp::progress::read_record_features(path) == 0);  // no file
  REQUIRE(ddp::progress::create_record_file(path) == 0);
  CHECK(ddp::progress::read_record_features(path) == 0);
  // What ddp_standby.point() writes in a cold worker: the field alone, the record not initialised.
  const uint32_t bit = ddp::progress::kFeatureStandbyPoint;
  const int fd = ::open(path.c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  REQUIRE(::pwrite(fd, &bit, sizeof bit, offsetof(ddp::progress::Record, features)) == sizeof bit);
  ::close(fd);
  CHECK_FALSE(ddp::progress::read_record_file(path));  // not fed: the hang detector sees nothing
  CHECK(ddp::progress::read_record_features(path) == bit);
}

TEST_CASE("python_flags: flags up to the script or -m, none without a script") {
  using V = std::vector<std::string>;
  CHECK(python_flags({"python3", "-u", "t.py", "-x"}) == V{"-u"});
  CHECK(python_flags({"python3", "-W", "error", "-u", "-m", "m"}) == V{"-W", "error", "-u"});
  CHECK_FALSE(python_flags({"python3", "-c", "pass"}));
  CHECK_FALSE(python_flags({"python3", "-u"}));
  CHECK(is_python_executable("/usr/bin/python3.11"));
  CHECK_FALSE(is_python_executable("/usr/bin/train"));
}

TEST_CASE("standby retries: the pool gives up after kMaxEarlyDeaths early deaths in a row, once") {
  StandbyRetries r;
  CHECK_FALSE(r.exited(false));
  CHECK_FALSE(r.exited(false));
  r.ready();  // a standby became ready: the count starts over
  CHECK_FALSE(r.exited(false));
  CHECK_FALSE(r.exited(true));  // a ready standby that dies (killed) is replaced, not counted
  for (int i = 1; i < StandbyRetries::kMaxEarlyDeaths; ++i) CHECK_FALSE(r.exited(false));
  CHECK(r.exited(false));
  CHECK(r.given_up());
  CHECK_FALSE(r.exited(false));  // said once
}

TEST_CASE("warm restarts flags: on by default with restarts, --no-warm-restarts turns it off, --preload") {
  CHECK_FALSE(parse({"prog"}).warm_restarts);
  CHECK(parse({"--max-restarts=1", "prog"}).warm_restarts);
  CHECK_FALSE(parse({"--max-restarts=1", "--no-warm-restarts", "prog"}).warm_restarts);
  CHECK_FALSE(parse({"--max-restarts=1", "--warm-restarts", "--no-warm-restarts", "prog"}).warm_restarts);
  CHECK(parse({"--warm-restarts", "prog"}).warm_restarts);
  CHECK_FALSE(parse({"--max-restarts=1", "prog"}, {{"PET_WARM_RESTARTS", "false"}}).warm_restarts);
  CHECK(parse({"--preload=numpy, torch.nn", "t.py"}).preload == std::vector<std::string>{"numpy", "torch.nn"});
  try {
    cli::parse_command_line({"--preload=numpy,1bad", "t.py"}, {});
    FAIL("expected a usage error");
  } catch (const LaunchError& e) {
    CHECK_THAT(e.what(), Catch::Contains("'1bad' is not a Python module name"));
  }
}

TEST_CASE("standby events: docs/events.md has a row for every standby state") {
  const std::string doc = ddp::test::read_file(std::string(DDP_SOURCE_DIR) + "/docs/events.md");
  for (const char* state : {"started", "ready", "adopted", "exited"}) {
    INFO(state);
    CHECK(doc.find("| `standby` | `" + std::string(state) + "` |") != std::string::npos);
  }
}
