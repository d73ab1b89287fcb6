// Worker output: prefixed whole lines on the console, torchrun's log-dir layout,
// --redirects, --tee, --local-ranks-filter (files keep everything), prefix templates.
#include <catch2/catch.hpp>

#include <filesystem>
#include <regex>

#include "tests/support/test_support.hpp"

using namespace ddp::test;
namespace fs = std::filesystem;

namespace {

// The single run directory under a --log-dir.
std::string run_dir(const TempDir& logs) {
  std::vector<std::string> dirs;
  for (const auto& e : fs::directory_iterator(logs.path())) dirs.push_back(e.path().string());
  REQUIRE(dirs.size() == 1);
  return dirs[0];
}

const std::string kTalk = "echo out-$RANK; echo err-$RANK >&2";

}  // namespace

TEST_CASE("every console line carries its rank prefix, stdout and stderr apart") {
  auto r = launch({"--nproc-per-node=3", "sh", "-c", kTalk});
  REQUIRE(r.exit_code == 0);
  for (int rank = 0; rank < 3; ++rank) {
    CHECK(count_matching(r.out, "[rank" + std::to_string(rank) + "]: out-" + std::to_string(rank) + "\n") == 1);
    CHECK(count_matching(r.err, "[rank" + std::to_string(rank) + "]: err-" + std::to_string(rank) + "\n") == 1);
  }
  CHECK(count_matching(r.out, "err-") == 0);
}

TEST_CASE("lines from many busy workers never interleave") {
  // Each worker writes 3000 long lines in odd-sized pieces; every console line must be whole.
  std::string script =
      "i=0; while [ $i -lt 3000 ]; do printf 'begin-%s-%s-' $RANK $i; "
      "printf 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx-end-%s\\n' $RANK; "
      "i=$((i+1)); done";
  auto r = launch({"--nproc-per-node=4", "sh", "-c", script}, {}, std::chrono::seconds(180));
  REQUIRE(r.exit_code == 0);
  std::regex whole(R"(\[rank(\d)\]: begin-(\d)-\d+-x+-end-(\d))");
  auto lines = lines_of(r.out);
  CHECK(lines.size() == 4 * 3000);
  int bad = 0;
  for (const auto& line : lines) {
    std::smatch m;
    if (!std::regex_match(line, m, whole) || m[1] != m[2] || m[2] != m[3]) ++bad;
  }
  CHECK(bad == 0);
}

TEST_CASE("a log dir keeps torchrun's layout with every stream") {
  TempDir logs;
  auto r = launch({"--nproc-per-node=2", "--log-dir", logs.path(), "--rdzv-id=myjob", "sh", "-c", kTalk});
  REQUIRE(r.exit_code == 0);
  std::string run = run_dir(logs);
  CHECK_THAT(fs::path(run).filename().string(), Catch::StartsWith("myjob_"));
  for (int rank = 0; rank < 2; ++rank) {
    std::string dir = run + "/attempt_0/" + std::to_string(rank);
    CHECK(read_file(dir + "/stdout.log") == "out-" + std::to_string(rank) + "\n");
    CHECK(read_file(dir + "/stderr.log") == "err-" + std::to_string(rank) + "\n");
  }
  CHECK(count_matching(r.out, "out-") == 2);  // and the console still shows it
  CHECK_THAT(r.err, Catch::Contains("logs in " + run));
}

TEST_CASE("redirects send streams to files only, tee to both") {
  TempDir logs;
  auto r = launch({"--nproc-per-node=2", "--log-dir", logs.path(), "--redirects=1", "--tee=0:2", "sh", "-c", kTalk});
  REQUIRE(r.exit_code == 0);
  CHECK(count_matching(r.out, "out-") == 0);  // stdout redirected for everyone
  CHECK(count_matching(r.err, "err-") == 2);  // stderr not redirected
  std::string run = run_dir(logs);
  CHECK(read_file(run + "/attempt_0/1/stdout.log") == "out-1\n");

  TempDir tmp;  // without --log-dir: files under TMPDIR, kept because output went there
  auto t = launch({"--nproc-per-node=1", "--redirects=3", "sh", "-c", kTalk}, {{"TMPDIR", tmp.path()}});
  CHECK(t.exit_code == 0);
  CHECK(t.out.empty());
  std::string kept = run_dir(tmp);
  CHECK(read_file(kept + "/attempt_0/0/stderr.log") == "err-0\n");
}

TEST_CASE("local-ranks-filter hides ranks on the console but not in the files") {
  TempDir logs;
  auto r = launch({"--nproc-per-node=3", "--log-dir", logs.path(), "--local-ranks-filter=0,2", "sh", "-c", kTalk});
  REQUIRE(r.exit_code == 0);
  CHECK(count_matching(r.out, "[rank0]: out-0") == 1);
  CHECK(count_matching(r.out, "[rank2]: out-2") == 1);
  CHECK(count_matching(r.out, "out-1") == 0);
  CHECK(count_matching(r.err, "err-1") == 0);
  CHECK(read_file(run_dir(logs) + "/attempt_0/1/stdout.log") == "out-1\n");
}

TEST_CASE("the line prefix follows the template flag or TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE") {
  auto r = launch({"--nproc-per-node=2", "--role=trainer", "--log-line-prefix-template=<${role_name}${local_rank}> ",
                   "sh", "-c", "echo hi"});
  CHECK(count_matching(r.out, "<trainer1> hi") == 1);
  auto e =
      launch({"--nproc-per-node=1", "sh", "-c", "echo hi"}, {{"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", "[${rank}]:"}});
  CHECK(e.out == "[0]:hi\n");
}

TEST_CASE("a temporary run directory is removed when nothing was redirected") {
  TempDir tmp;
  auto r = launch({"--nproc-per-node=2", "sh", "-c", "test -d \"$(dirname $TORCHELASTIC_ERROR_FILE)\""},
                  {{"TMPDIR", tmp.path()}});
  CHECK(r.exit_code == 0);  // the error file's directory existed for the worker
  CHECK(fs::is_empty(tmp.path()));
}

TEST_CASE("log dir /dev/null disables every file, error files included") {
  auto r = launch({"--log-dir=/dev/null", "sh", "-c", "test -z \"$TORCHELASTIC_ERROR_FILE\""});
  CHECK(r.exit_code == 0);
}
