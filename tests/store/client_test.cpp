// TcpStoreClient against peers that are not a working store: a listener that never
// speaks (the client's own deadlines) and one that speaks something else.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "tests/store/fixture.hpp"

using namespace ddp::launch::store;
using namespace ddp::launch::store::test;

namespace {
// A socket listening on 127.0.0.1: the kernel completes connections, nobody answers.
struct MuteListener {
  MuteListener() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    REQUIRE(::listen(fd, 16) == 0);
    socklen_t len = sizeof(addr);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
  }
  ~MuteListener() { ::close(fd); }
  int fd = -1;
  uint16_t port = 0;
};
}  // namespace

TEST_CASE("client: a peer that never greets fails the connect within its deadlines") {
  MuteListener mute;
  ClientOptions o;
  o.connect_timeout = 600ms;
  o.request_timeout = 200ms;
  Stopwatch sw;
  try {
    TcpStoreClient c("127.0.0.1", mute.port, o);
    FAIL("connected to a mute peer");
  } catch (const StoreUnavailable& e) {
    CHECK_THAT(std::string(e.what()),
               Catch::Contains("cannot reach the rendezvous store") && Catch::Contains("no reply to HELLO"));
  }
  CHECK(sw.seconds() < 2.0);
}

TEST_CASE("client: a peer speaking another protocol is named as such") {
  MuteListener other;
  std::thread impostor([&] {
    const int conn = ::accept(other.fd, nullptr, nullptr);
    const char frame[] = {0, 0, 0, 8, 'H', 'T', 'T', 'P', '/', '1', '.', '1'};
    ::send(conn, frame, sizeof(frame), MSG_NOSIGNAL);
    std::this_thread::sleep_for(300ms);
    ::close(conn);
  });
  ClientOptions o;
  o.connect_timeout = 2s;
  CHECK_THROWS_WITH(TcpStoreClient("127.0.0.1", other.port, o),
                    Catch::Contains("is not a ddp-launch rendezvous store") && Catch::Contains("magic"));
  impostor.join();
}

TEST_CASE("client: a name resolution failure is reported with the host") {
  ClientOptions o;
  o.connect_timeout = 200ms;
  CHECK_THROWS_WITH(TcpStoreClient("no-such-host.invalid", 29400, o),
                    Catch::Contains("cannot resolve 'no-such-host.invalid'"));
}

TEST_CASE("client: a host name that does not exist is final at once, not retried until the timeout") {
  ClientOptions o;
  o.connect_timeout = 60s;  // a retry would end in "cannot reach ... after 60 s"
  CHECK_THROWS_WITH(TcpStoreClient("no-such-host.invalid", 29400, o),
                    Catch::Contains("cannot resolve 'no-such-host.invalid'") &&
                        Catch::Contains("an address or a name every node resolves"));
}
