// Line splitting, prefix templates and the WorkerStream's console/file routing.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include "launcher/console/console_board.hpp"
#include "launcher/worker/output.hpp"
#include "tests/support/test_support.hpp"

using namespace ddp::launch;
using namespace ddp::launch::os;
using namespace ddp::launch::worker;
using namespace ddp::launch::console;

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

namespace {
std::vector<std::string> split_all(const std::vector<std::string>& chunks, bool flush = true) {
  LineSplitter s;
  std::vector<std::string> lines;
  auto sink = [&](std::string_view l) { lines.emplace_back(l); };
  for (const auto& c : chunks) s.feed(c, sink);
  if (flush) s.flush(sink);
  return lines;
}
}  // namespace

TEST_CASE("a carriage return starts the line over, as on a terminal") {
  CHECK(split_all({"10%\r20%\r30%\n"}) == std::vector<std::string>{"30%\n"});
  CHECK(split_all({"10%\r", "20%", "\r", "done\n"}) == std::vector<std::string>{"done\n"});
  CHECK(split_all({"dos line\r", "\n"}) == std::vector<std::string>{"dos line\n"});
  CHECK(split_all({"last frame\r"}) == std::vector<std::string>{"last frame\n"});  // kept at the end
  LineSplitter s;
  s.feed("1/3\r2/3", [](std::string_view) {});
  CHECK(s.partial() == "2/3");
}

TEST_CASE("a line longer than the limit goes out in pieces") {
  const size_t max = LineSplitter::kMaxLineBytes;
  std::string big(max * 2 + 10, 'x');
  auto lines = split_all({big.substr(0, 1000), big.substr(1000), "\n"});
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].size() == max + 1);
  CHECK(lines[1].size() == max + 1);
  CHECK(lines[2] == std::string(10, 'x') + "\n");
  // never inside a UTF-8 character: a 3-byte character straddling the limit moves whole
  std::string text(max - 1, 'a');
  text += "\xe2\x96\x88tail\n";
  auto cut = split_all({text});
  REQUIRE(cut.size() == 2);
  CHECK(cut[0] == std::string(max - 1, 'a') + "\n");
  CHECK(cut[1] == "\xe2\x96\x88tail\n");
}

TEST_CASE("a worker stream on a board: live line with prefix, complete lines above it") {
  std::string screen;
  ConsoleBoard board(
      2, [] { return 20; }, [&](int, std::string_view b) { screen += b; });
  WorkerStream s("[r1]: ", 2, UniqueFd(), &board, 3);
  s.consume("\r 10%");
  CHECK(screen.empty());  // drawn at refresh, not per chunk
  CHECK(board.dirty());
  board.refresh();
  CHECK(screen == "[r1]:  10%");
  screen.clear();
  s.consume("\r 20%");
  board.refresh();
  CHECK(screen == "\r\x1b[J[r1]:  20%");
  screen.clear();
  s.consume("\r100%\nnext");  // the line ends: written whole, the live line is the new one
  CHECK(screen == "\r\x1b[J[r1]: 100%\n");
  screen.clear();
  board.set_live(9, std::string(40, 'y'));  // a second live line, cut to the width
  board.refresh();
  CHECK(screen == "[r1]: next\n" + std::string(19, 'y'));
  screen.clear();
  s.finish();
  CHECK(screen == "\r\x1b[1A\x1b[J[r1]: next\n" + std::string(19, 'y'));
}

TEST_CASE("fit_to_width counts characters, drops escapes") {
  CHECK(fit_to_width("ab\x1b[31mcd\x1b[0m", 0) == "abcd");
  CHECK(fit_to_width("\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88", 3) == "\xe2\x96\x88\xe2\x96\x88");
  CHECK(fit_to_width("a\tb", 0) == "a b");
}
