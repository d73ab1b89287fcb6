// Line splitting, prefix templates and the WorkerStream's console/file routing.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include "launcher/worker/output.hpp"
#include "tests/support/test_support.hpp"

using namespace ddp::launch;

TEST_CASE("lines are emitted whole, however the bytes arrive") {
  LineSplitter s;
  std::vector<std::string> lines;
  auto sink = [&](std::string_view l) { lines.emplace_back(l); };
  s.feed("hel", sink);
  CHECK(lines.empty());
  s.feed("lo\nwor", sink);
  s.feed("ld\n\nlast", sink);
  CHECK(lines == std::vector<std::string>{"hello\n", "world\n", "\n"});
  s.flush(sink);
  CHECK(lines.back() == "last\n");
  s.flush(sink);
  CHECK(lines.size() == 4);
}

TEST_CASE("prefix templates expand torchrun's macros") {
  CHECK(expand_prefix_template("[rank${rank}]: ", 3, 1, "default") == "[rank3]: ");
  CHECK(expand_prefix_template("[${role_name}${local_rank}]:", 3, 1, "trainer") == "[trainer1]:");
  CHECK(expand_prefix_template("${unknown} $", 0, 0, "r") == "${unknown} $");
  CHECK(expand_prefix_template("", 0, 0, "r").empty());
}

TEST_CASE("a worker stream writes raw bytes to its file and prefixed lines to the console") {
  ddp::test::TempDir dir;
  int console = ::open((dir / "console").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  {
    WorkerStream s("[rank2]: ", console, open_log_file(dir / "a/b/stdout.log"));
    s.consume("one\ntw");
    s.consume("o\nthree");
    s.finish();
    CHECK(s.tail() == std::deque<std::string>{"one", "two", "three"});
  }
  ::close(console);
  CHECK(ddp::test::read_file(dir / "console") == "[rank2]: one\n[rank2]: two\n[rank2]: three\n");
  CHECK(ddp::test::read_file(dir / "a/b/stdout.log") == "one\ntwo\nthree");
}

TEST_CASE("a filtered stream still keeps its tail and file") {
  ddp::test::TempDir dir;
  WorkerStream s("p", -1, open_log_file(dir / "f.log"));
  for (int i = 0; i < 20; ++i) s.consume("line " + std::to_string(i) + "\n");
  CHECK(s.tail().size() == WorkerStream::kTailLines);
  CHECK(s.tail().back() == "line 19");
  CHECK(ddp::test::lines_of(ddp::test::read_file(dir / "f.log")).size() == 20);
}
