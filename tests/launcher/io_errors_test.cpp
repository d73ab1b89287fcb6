// The run directory or log files cannot be made (a path under a regular file fails even
// for root): exit 125, one line naming the path and the reason, no worker started.
#include <catch2/catch.hpp>

#include "tests/support/test_support.hpp"

using namespace ddp::test;

namespace {

void expect_io_error(const std::vector<std::string>& args, const std::string& path, const EnvOverrides& env = {}) {
  auto r = launch(args, env);
  INFO(r.err);
  CHECK(r.exit_code == 125);
  CHECK_THAT(r.err,
             Catch::StartsWith("ddp-launch: error: ") && Catch::Contains(path) && Catch::Contains("Not a directory"));
  CHECK(lines_of(r.err).size() == 1);
  CHECK(r.out.empty());
}

}  // namespace

TEST_CASE("a --log-dir that cannot be created exits 125 naming it") {
  TempDir dir;
  write_file(dir / "file", "not a directory\n");
  const std::string log_dir = dir / "file/logs";
  expect_io_error({"--nproc-per-node=1", "--log-dir", log_dir, "sh", "-c", "echo started"}, log_dir);
}

TEST_CASE("a TMPDIR where the run directory cannot be made exits 125 naming it") {
  TempDir dir;
  write_file(dir / "file", "not a directory\n");
  expect_io_error({"--nproc-per-node=1", "sh", "-c", "echo started"}, dir / "file/ddp-launch-",
                  {{"TMPDIR", dir / "file"}});
}
