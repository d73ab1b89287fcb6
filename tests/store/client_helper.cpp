// store_tests' helper mode `store_tests --client-helper PORT NAME HEARTBEAT_MS`: connects as
// a named client, sets helper/<NAME>, then pings until killed, so tests can kill -9 a real
// process holding a connection (liveness_test.cpp).
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "launcher/store/tcp_client.hpp"
#include "tests/support/helper_mode.hpp"

namespace {

int client_helper(int argc, char** argv) {
  using namespace ddp::launch::store;
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s --client-helper PORT NAME HEARTBEAT_MS\n", argv[0]);
    return 2;
  }
  ClientOptions o;
  o.name = argv[3];
  o.heartbeat_timeout_ms = static_cast<uint32_t>(std::stoul(argv[4]));
  TcpStoreClient client("127.0.0.1", static_cast<uint16_t>(std::stoi(argv[2])), o);
  client.set(std::string("helper/") + argv[3], "up");
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(o.heartbeat_timeout_ms / 3 + 1));
    client.ping();
  }
}

const ddp::test::HelperMode kClientHelper("--client-helper", client_helper);

}  // namespace
