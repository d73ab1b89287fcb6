// Seeded random fuzzing of the codec and of a live server's session state machine with
// random and mutated frames. The corpus (tests/store/fuzz_corpus.txt) keeps the seeds
// that run every time and extra frames to mutate; a run also tries one fresh seed, which
// it prints: add it to the corpus when it finds something. Bounded: a fixed number of
// cases per seed, a few seconds in all.
#include <catch2/catch.hpp>

#include <fstream>
#include <random>
#include <sstream>

#include "launcher/store/codec.hpp"
#include "tests/store/fixture.hpp"
#include "tests/store/raw_peer.hpp"

using namespace ddp::launch::store;
using namespace ddp::launch::store::test;

namespace {

struct Corpus {
  std::vector<uint64_t> seeds;
  std::vector<std::string> frames;  // whole frames, header included
};

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

// The corpus file's frames, plus a valid frame of every message and request op.
Corpus load_corpus() {
  Corpus c;
  std::ifstream in(DDP_STORE_FUZZ_CORPUS);
  REQUIRE(in);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string kind, value;
    words >> kind >> value;
    if (kind == "seed") c.seeds.push_back(std::stoull(value));
    if (kind == "frame") c.frames.push_back(from_hex(value));
  }
  c.frames.push_back(encode_greeting(Greeting{}));
  c.frames.push_back(encode_hello(Hello{}));
  for (uint8_t op = 2; op <= kLastOp; ++op) {
    Request q;
    q.op = static_cast<Op>(op);
    q.timeout_ms = 50;
    q.delta = 1;
    q.keys = {"k"};
    if (q.op == Op::kSet || q.op == Op::kMultiSet || q.op == Op::kAddOnce) q.values = {"v"};
    if (q.op == Op::kCompareSet) q.values = {"", "v"};
    if (q.op == Op::kPing || q.op == Op::kGoodbye) q.keys.clear();
    c.frames.push_back(encode_request(q));
  }
  Response r;
  r.values = {"a", "b"};
  r.message = "m";
  c.frames.push_back(encode_response(r));
  return c;
}

// One mutation of a corpus frame: flips, inserts, deletes, truncations, splices and
// boundary values written over length fields.
std::string mutate(const Corpus& c, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng() % n); };
  std::string f = c.frames[pick(c.frames.size())];
  const int edits = 1 + static_cast<int>(pick(4));
  for (int e = 0; e < edits && !f.empty(); ++e) {
    switch (pick(6)) {
      case 0: f[pick(f.size())] ^= static_cast<char>(1u << pick(8)); break;
      case 1: f.insert(pick(f.size() + 1), 1, static_cast<char>(rng())); break;
      case 2: f.erase(pick(f.size()), 1 + pick(4)); break;
      case 3: f.resize(pick(f.size() + 1)); break;
      case 4: f += c.frames[pick(c.frames.size())]; break;
      case 5: {
        static const uint32_t kBoundaries[] = {0, 1, 3, 4, 0x7f, 0xff, 0x1000, 0x1001, 0xffff, 0x7fffffff, 0xffffffff};
        const uint32_t v = kBoundaries[pick(std::size(kBoundaries))];
        const size_t at = pick(f.size());
        for (size_t i = 0; i < 4 && at + i < f.size(); ++i) f[at + i] = static_cast<char>(v >> (8 * (3 - i)));
        break;
      }
    }
  }
  return f;
}

// Decodes payload as every message kind: each either parses (and then round-trips) or
// throws ProtocolError; nothing else may escape.
void decode_everything(const std::string& payload) {
  try {
    const Request q = decode_request(payload);
    REQUIRE(decode_request(encode_request(q).substr(kFrameHeaderBytes)) == q);
  } catch (const ProtocolError&) {
  }
  try {
    const Response r = decode_response(payload);
    REQUIRE(decode_response(encode_response(r).substr(kFrameHeaderBytes)) == r);
  } catch (const ProtocolError&) {
  }
  try {
    decode_hello(payload);
  } catch (const ProtocolError&) {
  }
  try {
    decode_greeting(payload);
  } catch (const ProtocolError&) {
  }
}

void fuzz_codec(const Corpus& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 20000; ++i) {
    const std::string f = mutate(c, rng);
    if (f.size() > kFrameHeaderBytes) decode_everything(f.substr(kFrameHeaderBytes));
    FrameDecoder d(1 << 16, 4096);
    try {
      for (size_t at = 0; at < f.size();) {  // random chunking
        const size_t n = 1 + rng() % 16;
        d.feed(f.data() + at, std::min(n, f.size() - at));
        at += n;
        while (auto payload = d.next()) decode_everything(*payload);
      }
    } catch (const ProtocolError&) {
    }
  }
}

// Many connections, each sending a random mix of valid and mutated frames, before or
// after a real handshake; the server must stay up and serve a well-behaved client.
void fuzz_sessions(const Corpus& c, uint64_t seed) {
  ServerOptions o = local_options();
  o.max_frame_bytes = 1 << 16;
  o.read_timeout = 300ms;
  o.write_timeout = 300ms;
  LocalServer srv(o);
  std::mt19937_64 rng(seed);
  for (int conn = 0; conn < 150; ++conn) {
    RawPeer peer(srv.server.port());
    if (rng() % 4 != 0) peer.handshake(rng() % 2 ? "fuzz" + std::to_string(conn) : "", rng() % 2 ? 200 : 0);
    std::string burst;
    for (int i = 0, n = 1 + static_cast<int>(rng() % 8); i < n; ++i)
      burst += rng() % 3 ? mutate(c, rng) : c.frames[rng() % c.frames.size()];
    peer.send(burst);
    peer.drain(std::chrono::milliseconds(rng() % 3 == 0 ? 30 : 1));
  }
  auto client = srv.client();
  client->set("after", "fuzz");
  CHECK(client->get("after", 1s) == "fuzz");
  client->ping();
}

}  // namespace

TEST_CASE("fuzz: mutated frames only ever parse or raise ProtocolError (corpus seeds + one fresh)") {
  const Corpus c = load_corpus();
  REQUIRE_FALSE(c.seeds.empty());
  std::vector<uint64_t> seeds = c.seeds;
  seeds.push_back(std::random_device{}());
  for (uint64_t seed : seeds) {
    INFO("seed " << seed << " (add a failing one to tests/store/fuzz_corpus.txt)");
    fuzz_codec(c, seed);
  }
}

TEST_CASE("fuzz: a live server survives random and mutated frames on many connections") {
  const Corpus c = load_corpus();
  std::vector<uint64_t> seeds(c.seeds.begin(), c.seeds.begin() + std::min<size_t>(3, c.seeds.size()));
  seeds.push_back(std::random_device{}());
  for (uint64_t seed : seeds) {
    INFO("seed " << seed << " (add a failing one to tests/store/fuzz_corpus.txt)");
    fuzz_sessions(c, seed);
  }
}
