// ddp::Snapshot (docs/snapshots.md): in one process, a round trip of model, optimizer and
// extra values, a torn newest slot restored from the older one, and a model of another shape
// refused with the tensor named and nothing loaded; over gloo with two workers, the ranks
// agree on the newest step all hold (one rank a step ahead restores its older slot), restore
// nothing when no rank has one, heal a rank without one from one that has it, and fail
// together when the healed rank's model does not match. State on the CPU goes in place as a
// tensor table, read back by restore() and load_checkpoint (a persisted snapshot); the state of
// save() time lands (wait(), restore() and the next save() wait for a write in flight); a
// failed write turns snapshots off.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include "contract/snapshot_file.hpp"
#include "contract/snapshot_region.hpp"
#include "ddp/ddp.hpp"
#include "harness.hpp"
#include "worker_support.hpp"

namespace ddp::test {
namespace {

torch::nn::Sequential small_net(int seed, int hidden = 8) {
  torch::manual_seed(seed);
  return torch::nn::Sequential(torch::nn::Linear(4, hidden), torch::nn::Tanh(), torch::nn::Linear(hidden, 2));
}

void fill(torch::nn::Sequential& net, double value) {
  torch::NoGradGuard no_grad;
  for (auto& p : net->parameters()) p.fill_(value);
}

// The region of this process: an empty file named by DDP_LAUNCH_SNAPSHOT_FILE.
void use_region(const std::string& path) {
  std::ofstream(path, std::ios::trunc).flush();
  ::setenv(ddp::snapshot::kEnvVar, path.c_str(), 1);
}

// Rank r snapshots steps 1..DDP_TEST_SNAPSHOT_SAVES[r] (default "3,2"), its parameters filled
// with the step, then restores into a fresh model (hidden 16 on DDP_TEST_SNAPSHOT_OTHER_RANK)
// and logs what it got and what its region holds after. DDP_TEST_SNAPSHOT_NONE_RANK=R: that
// rank has no region at all.
int snapshot_agree() {
  const int rank = env_int("RANK", 0);
  const bool region = env_int("DDP_TEST_SNAPSHOT_NONE_RANK", -1) != rank;
  const std::string path = out_path("region." + std::to_string(rank));
  if (region) use_region(path);
  else ::unsetenv(ddp::snapshot::kEnvVar);
  const char* saves_env = std::getenv("DDP_TEST_SNAPSHOT_SAVES");
  const std::string saves = saves_env ? saves_env : "3,2";
  const int last_step = saves[static_cast<size_t>(2 * rank)] - '0';
  init_process_group(pg_options());
  auto net = small_net(1);
  Snapshot snap;
  for (int step = 1; step <= last_step; ++step) {
    fill(net, step);
    snap.save(step, *net, nullptr, {{"rank", int64_t(rank)}});
  }
  auto fresh = small_net(2, env_int("DDP_TEST_SNAPSHOT_OTHER_RANK", -1) == rank ? 16 : 8);
  try {
    const auto restored = snap.restore(*fresh, nullptr, torch::kCPU);
    if (!restored) {
      log() << "restored nothing";
    } else {
      std::string healed;
      for (const int r : restored->healed_ranks) healed += " " + std::to_string(r);
      log() << "restored step " << restored->step << " value " << fresh->parameters()[0].view(-1)[0].item<double>()
            << " rank " << restored->extra.at("rank").toInt() << (restored->healed ? " healed" : " own") << " source "
            << restored->source_rank << " healed ranks" << healed;
    }
  } catch (const CheckpointError& e) {
    log() << "error: " << e.what();
  }
  if (region) {
    const auto held = ddp::snapshot::read_newest_snapshot(path);
    log() << "region holds " << (held ? "step " + std::to_string(held->step) : std::string("nothing"));
  }
  destroy_process_group();
  return 0;
}

}  // namespace

const std::map<std::string, std::function<int()>>& snapshot_scenarios() {
  static const std::map<std::string, std::function<int()>> scenarios = {{"snapshot-agree", snapshot_agree}};
  return scenarios;
}

TEST_CASE("Snapshot in one process: round trip, a torn slot skipped, another model refused by name", "[snapshot]") {
  const TempDir scratch;
  use_region(scratch / "region");
  auto net = small_net(1);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  Snapshot snap;
  REQUIRE(snap.enabled());
  for (int step = 1; step <= 2; ++step) {
    torch::manual_seed(100 + step);
    opt.zero_grad();
    net->forward(torch::randn({5, 4})).pow(2).mean().backward();
    opt.step();
    REQUIRE(snap.save(step, net, &opt, {{"epoch", int64_t(7)}}));
  }
  CHECK(snap.last_bytes() > 0);

  auto copy = small_net(2);
  torch::optim::SGD copy_opt(copy->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  auto restored = snap.restore(copy, &copy_opt, torch::kCPU);
  REQUIRE(restored);
  CHECK(restored->step == 2);
  CHECK(restored->extra.at("epoch").toInt() == 7);
  for (size_t i = 0; i < net->parameters().size(); ++i)
    CHECK(torch::equal(net->parameters()[i], copy->parameters()[i]));

  SECTION("a torn newest slot: the older one is restored") {
    const int fd = ::open((scratch / "region").c_str(), O_RDWR);
    ddp::snapshot::Header h{};
    REQUIRE(::pread(fd, &h, sizeof h, 0) == sizeof h);
    const ddp::snapshot::Slot& newest = h.slots[h.slots[0].seq > h.slots[1].seq ? 0 : 1];
    REQUIRE(::pwrite(fd, "!", 1, static_cast<off_t>(newest.offset + newest.length / 2)) == 1);
    ::close(fd);
    auto older = snap.restore(copy, &copy_opt, torch::kCPU);
    REQUIRE(older);
    CHECK(older->step == 1);
  }
  SECTION("a model of another shape: an error naming the tensor, nothing loaded") {
    auto other = small_net(3, 16);
    const auto before = other->parameters()[0].clone();
    try {
      snap.restore(other, nullptr, torch::kCPU);
      FAIL("restore into another model did not throw");
    } catch (const CheckpointError& e) {
      CHECK_THAT(e.what(), Catch::Contains("tensor '0.weight'") && Catch::Contains("[16, 4]") &&
                               Catch::Contains("[8, 4]") && Catch::Contains("nothing was loaded") &&
                               Catch::Contains("in-memory snapshot of step 2"));
    }
    CHECK(torch::equal(other->parameters()[0], before));
  }
  ::unsetenv(ddp::snapshot::kEnvVar);
}

TEST_CASE("Snapshot without a launcher's region is off: save does nothing, restore finds nothing", "[snapshot]") {
  ::unsetenv(ddp::snapshot::kEnvVar);
  Snapshot snap;
  auto net = small_net(1);
  CHECK_FALSE(snap.enabled());
  CHECK_FALSE(snap.save(1, net, nullptr));
  CHECK_FALSE(snap.restore(net, nullptr, torch::kCPU).has_value());
}

TEST_CASE("Snapshot saves in turn: the state of save() time, landed by wait(), restore() and the next save",
          "[snapshot]") {
  const TempDir scratch;
  use_region(scratch / "region");
  auto net = small_net(1);
  Snapshot snap;
  for (int step = 1; step <= 5; ++step) {  // each save() waits for the write before it
    fill(net, step);
    REQUIRE(snap.save(step, net, nullptr));
  }
  REQUIRE(snap.wait());
  const auto newest = ddp::snapshot::read_newest_snapshot(scratch / "region");
  REQUIRE(newest);
  CHECK(newest->step == 5);
  const int fd = ::open((scratch / "region").c_str(), O_RDONLY);
  const ddp::snapshot::Header h = ddp::snapshot::read_header(fd);
  ::close(fd);
  CHECK(std::min(h.slots[0].step, h.slots[1].step) == 4);  // the previous one kept intact
  CHECK(snap.last_copy_seconds() > 0);
  CHECK(snap.total_blocked_seconds() >= snap.last_serialize_seconds());

  // The tensors change right after save() returns, while the write may still run: the
  // snapshot holds the values of save() time.
  fill(net, 6);
  REQUIRE(snap.save(6, net, nullptr));
  fill(net, 99);
  auto copy = small_net(2);
  const auto restored = snap.restore(copy, nullptr, torch::kCPU);  // waits for the write first
  REQUIRE(restored);
  CHECK(restored->step == 6);
  CHECK(copy->parameters()[0].view(-1)[0].item<double>() == 6);
  ::unsetenv(ddp::snapshot::kEnvVar);
}

TEST_CASE(
    "Snapshot on the CPU writes a tensor table in place: every tensor as of save(), read back by restore and "
    "load_checkpoint",
    "[snapshot]") {
  const TempDir scratch;
  use_region(scratch / "region");
  auto net = small_net(1);
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(0.01));
  auto train_step = [&](int seed) {
    torch::manual_seed(seed);
    opt.zero_grad();
    net->forward(torch::randn({5, 4})).pow(2).mean().backward();
    opt.step();
  };
  train_step(1);
  const c10::List<at::Tensor> history({torch::full({3}, 1.5)});
  const CheckpointExtra extra{{"epoch", int64_t(3)}, {"history", history}, {"rng", torch::arange(int64_t(1) << 21)}};
  std::vector<at::Tensor> params_then;
  for (const auto& p : net->parameters()) params_then.push_back(p.clone());
  const std::string file = scratch / "expected.pt";
  save_checkpoint(file, net, &opt, extra);

  Snapshot snap;
  REQUIRE(snap.save(1, net, &opt, extra));
  CHECK(snap.last_in_place());  // nothing left to run in the background
  CHECK(snap.last_background_serialize_seconds() == 0);
  train_step(2);  // the tensors change right after save() returned
  extra.at("history").toList().get(0).toTensor().fill_(-1);
  extra.at("rng").toTensor().fill_(-1);
  REQUIRE(snap.wait());

  const auto newest = ddp::snapshot::read_newest_snapshot(scratch / "region");
  REQUIRE(newest);
  const std::string& payload = newest->payload;
  REQUIRE(payload.size() > (size_t(8) << 20));  // the 16 MiB of rng are in it, raw
  CHECK(payload.compare(0, 4, "DDPT") == 0);
  const int fd = ::open((scratch / "region").c_str(), O_RDONLY);
  const ddp::snapshot::Header h = ddp::snapshot::read_header(fd);
  ::close(fd);
  const auto& slot = h.slots[0].seq > h.slots[1].seq ? h.slots[0] : h.slots[1];
  CHECK(slot.flags == ddp::snapshot::kPrefixChecked);  // the head checksummed, not the 16 MiB
  CHECK(slot.checked < (size_t(64) << 10));

  // What the launcher's persister would write: load_checkpoint reads it like a checkpoint.
  const std::string persisted = scratch / "ckpt_000000001.pt";
  std::ofstream(persisted, std::ios::binary) << payload;
  auto from_file = small_net(3);
  torch::optim::Adam from_file_opt(from_file->parameters(), torch::optim::AdamOptions(0.01));
  const CheckpointExtra loaded = load_checkpoint(persisted, from_file, &from_file_opt, torch::kCPU);
  for (size_t i = 0; i < params_then.size(); ++i) CHECK(torch::equal(from_file->parameters()[i], params_then[i]));
  CHECK(loaded.at("epoch").toInt() == 3);
  CHECK(loaded.at("rng").toTensor().equal(torch::arange(int64_t(1) << 21)));

  auto copy = small_net(2);
  torch::optim::Adam copy_opt(copy->parameters(), torch::optim::AdamOptions(0.01));
  Snapshot reader;
  const auto restored = reader.restore(copy, &copy_opt, torch::kCPU);
  REQUIRE(restored);
  for (size_t i = 0; i < params_then.size(); ++i) CHECK(torch::equal(copy->parameters()[i], params_then[i]));
  CHECK(restored->extra.at("history").toList().get(0).toTensor().equal(torch::full({3}, 1.5)));
  CHECK(restored->extra.at("rng").toTensor().equal(torch::arange(int64_t(1) << 21)));

  // The same optimizer state as the checkpoint file of save() time: one more step of each
  // gives bit-identical weights.
  auto reference = small_net(4);
  torch::optim::Adam reference_opt(reference->parameters(), torch::optim::AdamOptions(0.01));
  load_checkpoint(file, reference, &reference_opt, torch::kCPU);
  for (auto* pair : {&copy, &reference}) {
    auto& model = *pair;
    torch::optim::Adam& o = pair == &copy ? copy_opt : reference_opt;
    torch::manual_seed(7);
    o.zero_grad();
    model->forward(torch::randn({5, 4})).pow(2).mean().backward();
    o.step();
  }
  for (size_t i = 0; i < params_then.size(); ++i)
    CHECK(torch::equal(copy->parameters()[i], reference->parameters()[i]));

  // A restored optimizer state is the process's own: a later snapshot into the same region
  // changes nothing of it.
  const auto state_before = copy_opt.state().begin()->second->clone();
  fill(net, 5);
  REQUIRE(reader.save(2, net, &opt, extra));
  REQUIRE(reader.save(3, net, &opt, extra));
  const auto& exp_avg = static_cast<const torch::optim::AdamParamState&>(*copy_opt.state().begin()->second).exp_avg();
  CHECK(torch::equal(exp_avg, static_cast<const torch::optim::AdamParamState&>(*state_before).exp_avg()));
  ::unsetenv(ddp::snapshot::kEnvVar);
}

TEST_CASE("Snapshot of a value it cannot stage (a sparse tensor) serialises it on the caller's thread", "[snapshot]") {
  const TempDir scratch;
  use_region(scratch / "region");
  auto net = small_net(1);
  auto sparse = torch::eye(3).to_sparse();
  Snapshot snap;
  const int threads_before = at::get_num_threads();
  at::set_num_threads(1);  // a spare core: it would be serialised in the background
  const bool saved = snap.save(1, net, nullptr, {{"sparse", sparse}});
  at::set_num_threads(threads_before);
  REQUIRE(saved);
  REQUIRE(snap.wait());
  CHECK(snap.last_background_serialize_seconds() == 0);
  fill(net, 42);
  auto copy = small_net(2);
  const auto restored = snap.restore(copy, nullptr, torch::kCPU);
  REQUIRE(restored);
  CHECK(restored->extra.at("sparse").toTensor().to_dense().equal(torch::eye(3)));
  CHECK(copy->parameters()[0].view(-1)[0].item<double>() != 42);
  ::unsetenv(ddp::snapshot::kEnvVar);
}

TEST_CASE("Snapshot whose write fails (the region cannot grow): one warning, then off", "[snapshot]") {
  const TempDir scratch;
  use_region(scratch / "region");
  auto net = small_net(1, 256);  // a payload of several KiB
  Snapshot snap;
  struct rlimit before {};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &before) == 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of the signal
  struct rlimit small = before;
  small.rlim_cur = ddp::snapshot::kHeaderSize + 512;  // files this process writes stop here
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  const bool saved = snap.save(1, net, nullptr);  // on the CPU: written in place, the failure seen at once
  const bool landed = snap.wait();
  ::setrlimit(RLIMIT_FSIZE, &before);
  std::signal(SIGXFSZ, old_handler);
  CHECK_FALSE(saved);
  CHECK_FALSE(landed);
  CHECK_FALSE(snap.enabled());
  CHECK_FALSE(snap.save(2, net, nullptr));
  CHECK_FALSE(ddp::snapshot::read_newest_snapshot(scratch / "region").has_value());
  ::unsetenv(ddp::snapshot::kEnvVar);
}

TEST_CASE("Snapshot over two workers: the newest step all hold, or nothing when no rank has one", "[snapshot]") {
  Workers w = run_workers("snapshot-agree", 2);
  INFO(w.describe());
  REQUIRE(w.all_ok());
  CHECK_THAT(w.ranks[0].output, Catch::Contains("restored step 2 value 2 rank 0 own source -1 healed ranks\n"));
  CHECK_THAT(w.ranks[1].output, Catch::Contains("restored step 2 value 2 rank 1 own source -1 healed ranks\n"));
  Workers none = run_workers("snapshot-agree", 2, {{"DDP_TEST_SNAPSHOT_SAVES", "0,0"}});
  INFO(none.describe());
  REQUIRE(none.all_ok());
  for (const auto& r : none.ranks) CHECK_THAT(r.output, Catch::Contains("restored nothing"));
}

TEST_CASE("Snapshot over two workers: a rank without one is healed from a rank that has it", "[snapshot]") {
  SECTION("an empty region: healed with rank 0's step 3, which its region then holds") {
    Workers w = run_workers("snapshot-agree", 2, {{"DDP_TEST_SNAPSHOT_SAVES", "3,0"}});
    INFO(w.describe());
    REQUIRE(w.all_ok());
    CHECK_THAT(w.ranks[0].output, Catch::Contains("restored step 3 value 3 rank 0 own source 0 healed ranks 1\n"));
    CHECK_THAT(w.ranks[1].output, Catch::Contains("restored step 3 value 3 rank 0 healed source 0 healed ranks 1\n"));
    CHECK_THAT(w.ranks[1].output, Catch::Contains("region holds step 3"));
  }
  SECTION("no region at all (rank 0 without one): rank 1 is the source") {
    Workers w = run_workers("snapshot-agree", 2, {{"DDP_TEST_SNAPSHOT_NONE_RANK", "0"}});
    INFO(w.describe());
    REQUIRE(w.all_ok());
    CHECK_THAT(w.ranks[0].output, Catch::Contains("restored step 2 value 2 rank 1 healed source 1 healed ranks 0\n"));
    CHECK_THAT(w.ranks[1].output, Catch::Contains("restored step 2 value 2 rank 1 own source 1 healed ranks 0\n"));
  }
  SECTION("another model on the healed rank: both ranks fail, nothing loaded, the tensor named") {
    Workers w =
        run_workers("snapshot-agree", 2, {{"DDP_TEST_SNAPSHOT_SAVES", "3,0"}, {"DDP_TEST_SNAPSHOT_OTHER_RANK", "1"}});
    INFO(w.describe());
    REQUIRE(w.all_ok());
    CHECK_THAT(w.ranks[1].output, Catch::Contains("error: the in-memory snapshot of step 3 (received from rank 0) "
                                                  "does not match the model: tensor '0.weight'"));
    CHECK_THAT(w.ranks[0].output, Catch::Contains("does not load on rank 1"));
    CHECK_THAT(w.ranks[1].output, Catch::Contains("region holds nothing"));
  }
}

}  // namespace ddp::test
