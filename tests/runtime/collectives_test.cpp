// libddp's collectives: the worker scenarios behind tests/runtime/check_collectives.py (every
// collective on deterministic inputs, dumped as text and compared there with Python torch 1.13
// running the same through gloo; and the C++ ranks of a job shared with Python ranks), and
// the misuse cases (wrong shapes, a bad root, a non-member, a desync, a peer that never calls:
// a ddp::Error naming ranks, shapes or the collective and its number, never a hang).
#include <catch2/catch.hpp>

#include <fstream>
#include <functional>
#include <iomanip>
#include <map>
#include <thread>

#include "ddp/ddp.hpp"
#include "harness.hpp"
#include "worker_support.hpp"

namespace ddp::test {
namespace {

// The same inputs as collectives_ref.py's input().
torch::Tensor input(torch::ScalarType dtype, int64_t n, int64_t r, int64_t k) {
  auto base = torch::arange(n, torch::kFloat64);
  if (c10::isFloatingType(dtype)) return (base * 0.37 + r * 1.5 + k * 0.25 + 1).to(dtype);
  return (torch::remainder(base * 3 + r * 7 + k, 11) + 1).to(dtype);
}

class Dump {
 public:
  explicit Dump(const std::string& path) : out_(path) { out_ << std::setprecision(17); }
  void put(const std::string& name, const torch::Tensor& t) {
    auto v = t.to(torch::kFloat64).contiguous().view(-1);
    out_ << name;
    for (int64_t i = 0; i < v.numel(); ++i) out_ << ' ' << v[i].item<double>();
    out_ << '\n';
  }

 private:
  std::ofstream out_;
};

struct DType {
  const char* name;
  torch::ScalarType type;
};
const DType kDTypes[] = {
    {"float32", torch::kFloat32}, {"float64", torch::kFloat64}, {"int32", torch::kInt32}, {"int64", torch::kInt64}};

std::vector<std::pair<const char*, ReduceOp>> ops_for(torch::ScalarType t) {
  if (c10::isFloatingType(t)) {
    return {{"sum", ReduceOp::kSum},
            {"avg", ReduceOp::kAvg},
            {"product", ReduceOp::kProduct},
            {"min", ReduceOp::kMin},
            {"max", ReduceOp::kMax}};
  }
  return {{"sum", ReduceOp::kSum},   {"product", ReduceOp::kProduct}, {"min", ReduceOp::kMin},  {"max", ReduceOp::kMax},
          {"band", ReduceOp::kBand}, {"bor", ReduceOp::kBor},         {"bxor", ReduceOp::kBxor}};
}

// Rows member r sends member j in the uneven all_to_all (symmetric: what j expects from r).
int64_t a2a_rows(int r, int j) { return (r + j) % 3 + 1; }

// The reduce_scatter / all_to_all part, shared with the mixed job.
void shared_part(Dump& d, int rank, int world) {
  for (const auto& dt : kDTypes) {
    const std::string t = dt.name;
    auto ar = input(dt.type, 5, rank, 1);
    all_reduce(ar);
    d.put("shared/all_reduce/" + t, ar);
    for (const auto& [opname, op] : ops_for(dt.type)) {
      if (op == ReduceOp::kProduct || op == ReduceOp::kBand || op == ReduceOp::kBor || op == ReduceOp::kBxor) continue;
      std::vector<torch::Tensor> ins;
      for (int j = 0; j < world; ++j) ins.push_back(input(dt.type, 3, rank * 10 + j, 2));
      auto out = torch::empty({3}, dt.type);
      reduce_scatter(out, ins, op);
      d.put("reduce_scatter/" + t + "/" + opname, out);
      auto big = input(dt.type, 3 * world, rank, 3);
      auto out2 = torch::empty({3}, dt.type);
      reduce_scatter_tensor(out2, big, op);
      d.put("reduce_scatter_tensor/" + t + "/" + opname, out2);
    }
    std::vector<int64_t> in_s, out_s;
    int64_t in_rows = 0, out_rows = 0;
    for (int j = 0; j < world; ++j) {
      in_s.push_back(a2a_rows(rank, j));
      out_s.push_back(a2a_rows(j, rank));
      in_rows += in_s.back();
      out_rows += out_s.back();
    }
    auto a2a_in = input(dt.type, in_rows * 2, rank, 4).view({in_rows, 2});
    auto a2a_out = torch::empty({out_rows, 2}, dt.type);
    all_to_all_single(a2a_out, a2a_in, out_s, in_s);
    d.put("all_to_all_single/" + t + "/uneven", a2a_out);
    auto eq_in = input(dt.type, 2 * world, rank, 5);
    auto eq_out = torch::empty({2 * world}, dt.type);
    all_to_all_single(eq_out, eq_in);
    d.put("all_to_all_single/" + t + "/equal", eq_out);
    std::vector<torch::Tensor> l_in, l_out;
    for (int j = 0; j < world; ++j) {
      l_in.push_back(input(dt.type, a2a_rows(rank, j), rank * 10 + j, 6));
      l_out.push_back(torch::empty({a2a_rows(j, rank)}, dt.type));
    }
    all_to_all(l_out, l_in);
    for (int j = 0; j < world; ++j) d.put("all_to_all/" + t + "/from" + std::to_string(j), l_out[j]);
  }
}

// Every collective on the inputs collectives_ref.py uses; dump_<rank>.txt in $DDP_TEST_OUT.
int collectives_dump() {
  init_process_group(pg_options());
  const int rank = get_rank();
  const int world = get_world_size();
  Dump d(out_path("dump_" + std::to_string(rank) + ".txt"));
  for (const auto& dt : kDTypes) {
    const std::string t = dt.name;
    for (const auto& [opname, op] : ops_for(dt.type)) {
      auto x = input(dt.type, 5, rank, 0);
      all_reduce(x, op);
      d.put("all_reduce/" + t + "/" + opname, x);
      auto y = input(dt.type, 4, rank, 1);
      reduce(y, 1 % world, op);
      if (rank == 1 % world) d.put("reduce/" + t + "/" + opname, y);
    }
    auto b = input(dt.type, 6, rank, 2);
    broadcast(b, world - 1);
    d.put("broadcast/" + t, b);
    auto g = all_gather(input(dt.type, 3, rank, 3));
    for (int j = 0; j < world; ++j) d.put("all_gather/" + t + "/" + std::to_string(j), g[j]);
    auto into = torch::empty({world, 3}, dt.type);
    all_gather_into_tensor(into, input(dt.type, 3, rank, 4));
    d.put("all_gather_into_tensor/" + t, into);
    auto ga = gather(input(dt.type, 2, rank, 5), world - 1);
    for (size_t j = 0; j < ga.size(); ++j) d.put("gather/" + t + "/" + std::to_string(j), ga[j]);
    std::vector<torch::Tensor> sl;
    if (rank == 0) {
      for (int j = 0; j < world; ++j) sl.push_back(input(dt.type, 4, j, 6));
    }
    auto sc = torch::empty({4}, dt.type);
    scatter(sc, sl, 0);
    d.put("scatter/" + t, sc);
  }
  shared_part(d, rank, world);
  // Point to point: a ring with isend/irecv, then rank 0 receives from any source.
  auto mine = input(torch::kFloat64, 4, rank, 7);
  auto from_left = torch::empty({4}, torch::kFloat64);
  Work rx = irecv(from_left, (rank + world - 1) % world);
  Work tx = isend(mine, (rank + 1) % world);
  tx.wait();
  rx.wait();
  expect(rx.is_completed() && rx.source_rank() == (rank + world - 1) % world, "irecv source");
  d.put("ring", from_left);
  if (rank == 0) {
    std::map<int, torch::Tensor> got;
    for (int i = 1; i < world; ++i) {
      auto t = torch::empty({3}, torch::kFloat32);
      const int src = recv(t);
      got[src] = t;
    }
    for (auto& [src, t] : got) d.put("recv_any/" + std::to_string(src), t);
  } else {
    send(input(torch::kFloat32, 3, rank, 8), 0);
  }
  // Async forms, several in flight at once.
  auto a1 = input(torch::kFloat32, 5, rank, 9);
  auto a2 = input(torch::kFloat64, 6, rank, 10);
  std::vector<torch::Tensor> a3;
  auto a4 = torch::empty({3}, torch::kFloat32);
  std::vector<torch::Tensor> a4_in;
  for (int j = 0; j < world; ++j) a4_in.push_back(input(torch::kFloat32, 3, rank * 10 + j, 11));
  std::vector<Work> works{async::all_reduce(a1, ReduceOp::kMax), async::broadcast(a2, 0),
                          async::all_gather(a3, input(torch::kInt64, 2, rank, 12)),
                          async::reduce_scatter(a4, a4_in, ReduceOp::kSum), async::barrier()};
  for (auto& w : works) w.wait();
  for (auto& w : works) expect(w.is_completed(), "completed after wait");
  d.put("async/all_reduce", a1);
  d.put("async/broadcast", a2);
  for (int j = 0; j < world; ++j) d.put("async/all_gather/" + std::to_string(j), a3[j]);
  d.put("async/reduce_scatter", a4);
  // A subgroup of the first and the last rank.
  Group ends = new_group({0, world - 1});
  if (ends.is_member()) {
    auto s = input(torch::kFloat32, 4, rank, 13);
    all_reduce(s, ReduceOp::kSum, ends);
    d.put("group/all_reduce", s);
    std::vector<torch::Tensor> ins{input(torch::kFloat32, 2, rank, 14), input(torch::kFloat32, 2, rank, 15)};
    auto out = torch::empty({2}, torch::kFloat32);
    reduce_scatter(out, ins, ReduceOp::kSum, ends);
    d.put("group/reduce_scatter", out);
  }
  barrier();
  destroy_process_group();
  return 0;
}

// The C++ ranks of a job whose other ranks run collectives_ref.py --mixed: the same group (no
// shape check: the Python ranks do not exchange fingerprints).
int collectives_mixed() {
  ProcessGroupOptions o = pg_options();
  o.check_shapes = false;
  init_process_group(o);
  Dump d(out_path("dump_" + std::to_string(get_rank()) + ".txt"));
  shared_part(d, get_rank(), get_world_size());
  barrier();
  destroy_process_group();
  return 0;
}

// Misuse, DDP_TEST_MISUSE names the case; every rank prints the ddp::Error it caught.
int collectives_misuse() {
  ProcessGroupOptions o = pg_options();
  o.check_shapes = env_int("DDP_TEST_CHECK", 1) != 0;
  init_process_group(o);
  const int rank = get_rank();
  const std::string what = env_or("DDP_TEST_MISUSE", "");
  auto report = [&](const std::function<void()>& body) {
    try {
      body();
      log() << "no error";
    } catch (const ConfigError& e) {
      log() << "ConfigError: " << e.what();
    } catch (const TimeoutError& e) {
      log() << "TimeoutError: " << e.what();
    } catch (const CommError& e) {
      log() << "CommError: " << e.what();
    }
  };
  if (what == "shapes") {
    auto t = torch::ones({rank == 0 ? 4 : 6});
    report([&] { all_reduce(t); });
    report([&] { all_reduce(t); });  // the group stays usable: the check caught it before gloo
    auto ok = torch::ones({2});
    all_reduce(ok);
    expect(ok[0].item<float>() == 2.0f, "all_reduce after a mismatch");
  } else if (what == "splits") {
    auto in = torch::ones({4});
    auto out = torch::empty({rank == 0 ? 4 : 6});
    std::vector<int64_t> out_s = rank == 0 ? std::vector<int64_t>{2, 2} : std::vector<int64_t>{3, 3};
    report([&] { all_to_all_single(out, in, out_s, {2, 2}); });
  } else if (what == "desync") {
    auto t = torch::ones({3});
    report([&] { rank == 0 ? all_reduce(t) : broadcast(t, 0); });
  } else if (what == "dst") {
    auto t = torch::ones({3});
    report([&] { reduce(t, 5); });
    report([&] { send(t, rank); });
    std::vector<torch::Tensor> one{torch::ones({3})};
    report([&] { scatter(t, one, 0); });  // too short on src, not allowed elsewhere
    auto small = torch::empty({5});
    report([&] { all_gather_into_tensor(small, t); });
    barrier();
  } else if (what == "nonmember") {
    Group first = new_group({0});
    auto t = torch::ones({3});
    if (rank == 1) report([&] { all_reduce(t, ReduceOp::kSum, first); });
    barrier();
  } else if (what == "stall") {
    // Rank 1 never calls: rank 0's collective times out naming itself and its number.
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(env_int("DDP_TEST_TIMEOUT_MS", 4000) + 2000));
      return 0;
    }
    std::vector<torch::Tensor> ins{torch::ones({2}), torch::ones({2})};
    auto out = torch::empty({2});
    report([&] {
      Work w = async::reduce_scatter(out, ins, ReduceOp::kSum);
      w.wait();
    });
  } else if (what == "recv-size") {
    // A longer message than the buffer: gloo aborts the receiving process (documented).
    if (rank == 0) {
      send(torch::ones({6}), 1);
    } else {
      auto t = torch::empty({4});
      recv(t, 0);
    }
  }
  return 0;
}

// Not a test: the time of a small all_reduce with and without the shape check (run by hand,
// see docs/runtime.md "Collectives").
int collectives_latency() {
  ProcessGroupOptions o = pg_options();
  o.check_shapes = env_int("DDP_TEST_CHECK", 1) != 0;
  init_process_group(o);
  const int n = env_int("DDP_TEST_REPEATS", 500);
  for (int64_t numel : {int64_t{1}, int64_t{1} << 20}) {
    auto t = torch::ones({numel});
    for (int i = 0; i < 20; ++i) all_reduce(t);
    barrier();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) all_reduce(t);
    const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
    log_rank0() << "check_shapes=" << o.check_shapes << " all_reduce of " << numel << " float32: " << took.count() / n
                << " us";
  }
  destroy_process_group();
  return 0;
}

}  // namespace

const std::map<std::string, std::function<int()>>& collectives_scenarios() {
  static const std::map<std::string, std::function<int()>> m = {{"collectives-dump", collectives_dump},
                                                                {"collectives-mixed", collectives_mixed},
                                                                {"collectives-misuse", collectives_misuse},
                                                                {"collectives-latency", collectives_latency}};
  return m;
}

}  // namespace ddp::test

using namespace ddp::test;

namespace {
Workers misuse(const std::string& what, Env env = {}) {
  env["DDP_TEST_MISUSE"] = what;
  if (!env.count("DDP_TEST_TIMEOUT_MS")) env["DDP_TEST_TIMEOUT_MS"] = "20000";
  return run_workers("collectives-misuse", 2, env, std::chrono::seconds(90));
}
}  // namespace

TEST_CASE("collectives: mismatched shapes are a ConfigError naming ranks and shapes, on every rank", "[collectives]") {
  auto w = misuse("shapes");
  INFO(w.describe());
  REQUIRE(w.all_ok());
  for (const auto& r : w.ranks) {
    CHECK_THAT(r.output, Catch::Contains("ConfigError: all_reduce #1: the members passed tensors of different sizes: "
                                         "rank 0: all_reduce (sum) [4] Float; rank 1: all_reduce (sum) [6] Float"));
    CHECK_THAT(r.output, Catch::Contains("ConfigError: all_reduce #2:"));
  }
}

TEST_CASE("collectives: all_to_all splits that do not pair up name the sender and the receiver", "[collectives]") {
  auto w = misuse("splits");
  INFO(w.describe());
  REQUIRE(w.all_ok());
  for (const auto& r : w.ranks) {
    CHECK_THAT(r.output, Catch::Contains("ConfigError: all_to_all #1: rank 0 sends 2 elements to rank 1, which "
                                         "expects 3 from it"));
  }
}

TEST_CASE("collectives: different collectives on different ranks are a ConfigError, not a hang", "[collectives]") {
  auto w = misuse("desync");
  INFO(w.describe());
  REQUIRE(w.all_ok());
  for (const auto& r : w.ranks) {
    CHECK_THAT(r.output, Catch::Contains("the members called different collectives"));
    CHECK_THAT(r.output, Catch::Contains("rank 0: all_reduce (sum) [3] Float; rank 1: broadcast [3] Float root 0"));
  }
}

TEST_CASE("collectives: a bad root, a send to itself, a wrong scatter list or output are local ConfigErrors",
          "[collectives]") {
  auto w = misuse("dst");
  INFO(w.describe());
  REQUIRE(w.all_ok());
  CHECK_THAT(w.ranks[0].output, Catch::Contains("ConfigError: rank 5 is not a member of this group"));
  CHECK_THAT(w.ranks[1].output, Catch::Contains("ConfigError: send: dst 1 is this process itself"));
  CHECK_THAT(w.ranks[0].output, Catch::Contains("ConfigError: scatter: src passes one tensor per member: 2, got 1"));
  CHECK_THAT(w.ranks[1].output, Catch::Contains("ConfigError: scatter: only src passes a scatter_list"));
  CHECK_THAT(w.ranks[1].output, Catch::Contains("ConfigError: all_gather_into_tensor: the output must hold 2 x the "
                                                "input's 3 elements of Float, got [5] Float"));
}

TEST_CASE("collectives: a non-member calling a subgroup's collective is a ConfigError", "[collectives]") {
  auto w = misuse("nonmember");
  INFO(w.describe());
  REQUIRE(w.all_ok());
  CHECK_THAT(w.ranks[1].output, Catch::Contains("ConfigError: this process is not a member of the group"));
}

TEST_CASE("collectives: a peer that never calls times out naming the collective and its number", "[collectives]") {
  for (const char* check : {"1", "0"}) {
    auto w = misuse("stall", {{"DDP_TEST_CHECK", check}, {"DDP_TEST_TIMEOUT_MS", "4000"}});
    INFO("check_shapes " << check << "\n" << w.describe());
    REQUIRE(w.all_ok());
    CHECK_THAT(w.ranks[0].output, Catch::Contains("TimeoutError: reduce_scatter #1"));
    CHECK_THAT(w.ranks[0].output, Catch::Contains("a peer is stuck or stopped calling collectives"));
  }
}

TEST_CASE("collectives: recv into a smaller buffer aborts the receiver with gloo's message", "[collectives]") {
  auto w = misuse("recv-size");
  INFO(w.describe());
  CHECK(w.ranks[1].exit_code == 134);
  CHECK_THAT(w.ranks[1].output, Catch::Contains("op.preamble.length <= op.nbytes"));
  CHECK(w.ranks[0].exit_code == 0);
}
