// Bad input to the real binary: one clear line on stderr, a documented exit code, nothing started.
#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "tests/support/test_support.hpp"

using namespace ddp::test;

namespace {

void expect_error(const std::vector<std::string>& args, int code, const std::string& needle,
                  const EnvOverrides& env = {}) {
  auto r = launch(args, env);
  INFO(r.err);
  CHECK(r.exit_code == code);
  CHECK_THAT(r.err, Catch::StartsWith("ddp-launch: error: ") && Catch::Contains(needle));
  CHECK(lines_of(r.err).size() == 1);  // one line, never a stack trace
  CHECK(r.out.empty());
}

}  // namespace

TEST_CASE("bad worker counts and node options exit 121") {
  expect_error({"--nproc-per-node=0", "true"}, 121, "positive number of workers");
  expect_error({"--nproc-per-node=-3", "true"}, 121, "--nproc-per-node");
  expect_error({"--nproc-per-node=many", "true"}, 121, "got 'many'");
  expect_error({"--nnodes=0", "true"}, 121, "--nnodes");
  expect_error({"--nnodes=3:1", "true"}, 121, "MIN <= MAX");
  expect_error({"--master-port=65536", "true"}, 121, "from 0 to 65535");
  expect_error({"--devices=0,a", "true"}, 121, "--devices");
  expect_error({"--frobnicate", "true"}, 121, "unknown option '--frobnicate'");
  expect_error({}, 121, "no program given");
}

TEST_CASE("missing or non-executable programs exit 127 and 126") {
  TempDir dir;
  expect_error({"./definitely-not-here"}, 127, "not found");
  expect_error({"no-such-tool-anywhere"}, 127, "not found on PATH");
  write_file(dir / "plain", "echo hi\n");
  expect_error({dir / "plain"}, 126, "chmod +x");
  expect_error({dir / "missing.py"}, 127, "not found or not readable");
  expect_error({"x.py"}, 127, "PYTHON_EXEC", {{"PYTHON_EXEC", "/no/python"}});
}

TEST_CASE("GPU modes without GPUs exit 122") {
  expect_error({"--nproc-per-node=gpu", "true"}, 122, "no CUDA device", {{"CUDA_VISIBLE_DEVICES", ""}});
  expect_error({"--nproc-per-node=4", "--devices=0,1", "true"}, 122, "--devices selects only 2 GPUs",
               {{"CUDA_VISIBLE_DEVICES", "0,1,2"}});
  expect_error({"--devices=7", "true"}, 122, "GPU 7", {{"CUDA_VISIBLE_DEVICES", "0,1"}});
}

TEST_CASE("an explicit master port that is taken fails at once, naming address and port") {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor taken(io, {boost::asio::ip::tcp::v4(), 0});
  int port = taken.local_endpoint().port();
  expect_error({"--master-port=" + std::to_string(port), "true"}, 123,
               "master port 127.0.0.1:" + std::to_string(port) + " is already in use");
}

TEST_CASE("a c10d endpoint port held here by a socket that accepts nothing: the error says so, not only 'refused'") {
  // Bound, never listening: what a connection's own end looks like when it took the port.
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket held(io);
  held.open(boost::asio::ip::tcp::v4());
  held.bind({boost::asio::ip::address_v4::loopback(), 0});
  const std::string port = std::to_string(held.local_endpoint().port());
  auto r = launch(
      {"--nnodes=2", "--rdzv-backend=c10d", "--rdzv-endpoint=127.0.0.1:" + port, "--rdzv-conf=join_timeout=1", "true"});
  INFO(r.err);
  CHECK(r.exit_code == 124);
  CHECK_THAT(r.err, Catch::Contains("cannot reach the rendezvous store at 127.0.0.1:" + port) &&
                        Catch::Contains("(port " + port +
                                        " is in use on this machine, so this launcher did not host "
                                        "the store, yet nothing answered there") &&
                        Catch::Contains("`ss -tanp 'sport = :" + port + "'` names it"));
}

TEST_CASE("help goes to stdout and exits 0") {
  auto r = launch({"--help"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("--nproc-per-node") && Catch::Contains("--max-restarts"));
}

TEST_CASE("a bad --rdzv-endpoint exits 121 at once, --dry-run included, naming the value") {
  expect_error({"--dry-run", "--rdzv-backend=c10d", "--nnodes=2", "--rdzv-endpoint=host:notaport", "true"}, 121,
               "--rdzv-endpoint: 'host:notaport' is not HOST[:PORT]");
  expect_error({"--rdzv-backend=c10d", "--nnodes=2", "--rdzv-endpoint=a:29400,b:29400", "true"}, 121,
               "'a:29400,b:29400'");
  expect_error({"--rdzv-backend=etcd", "--nnodes=2", "--rdzv-endpoint=e1:2379,e2:x", "true"}, 121, "'e2:x'");
}
