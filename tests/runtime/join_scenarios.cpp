// Worker scenarios of the join() tests (join_test.cpp): uneven shards trained under join()
// with the options the parent sets in DDP_TEST_* variables, and misuse inside a join (another
// collective, an evaluation forward) that must throw DdpError on every rank instead of hanging.
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

#include "ddp/ddp.hpp"
#include "join_model.hpp"
#include "worker_support.hpp"

namespace ddp::test {
namespace {

JoinConfig config_from_env() {
  JoinConfig c;
  std::stringstream list(env_or("DDP_TEST_JOIN_BATCHES", "3,5"));
  for (std::string item; std::getline(list, item, ',');) c.batches.push_back(std::stoi(item));
  c.accumulate = env_int("DDP_TEST_ACCUM", 1);
  c.divide_by_initial = env_or("DDP_TEST_JOIN_DIVIDE", "initial") == "initial";
  return c;
}

DistributedDataParallel<JoinNet> make_model(const JoinNet& net) {
  DdpOptions o;
  o.bucket_cap_mb = o.first_bucket_cap_mb = std::stod(env_or("DDP_TEST_BUCKET_MB", "25"));
  o.gradient_as_bucket_view = env_int("DDP_TEST_GRAD_VIEW", 0) != 0;
  o.find_unused_parameters = env_int("DDP_TEST_FIND_UNUSED", 0) != 0;
  DistributedDataParallel<JoinNet> model(net, o);
  if (env_or("DDP_TEST_HOOK", "none") == "allreduce") model.register_comm_hook(hooks::allreduce());
  return model;
}

int join_uneven() {
  init_process_group(pg_options());
  const int rank = get_rank();
  const JoinConfig c = config_from_env();
  expect(c.world() == get_world_size(), "DDP_TEST_JOIN_BATCHES has one entry per rank");
  JoinNet net = make_join_net(1000 + rank);  // differs per rank: DDP broadcasts rank 0's
  auto model = make_model(net);
  auto opt = make_join_optimizer(net->parameters());
  JoinOptions options;
  options.divide_by_initial_world_size = c.divide_by_initial;
  const JoinResult result = model.join(
      [&] {
        for (int step = 0; step < c.batches[static_cast<size_t>(rank)]; ++step) {
          opt.zero_grad();
          for (int micro = 0; micro < c.accumulate; ++micro) {
            auto [x, y] = join_batch(rank, step, micro);
            auto run_micro = [&] { (torch::mse_loss(model(x), y) / c.accumulate).backward(); };
            if (micro + 1 < c.accumulate) {
              auto guard = model.no_sync();
              run_micro();
            } else {
              run_micro();
            }
          }
          opt.step();
        }
      },
      options);
  auto done = torch::ones({1});
  all_reduce(done);  // collectives work again once join() has returned
  expect(done.item<double>() == c.world(), "all_reduce after join");
  std::vector<torch::Tensor> params;
  for (auto& p : net->parameters()) params.push_back(p.detach().clone());
  torch::save(params, out_path("params_" + std::to_string(rank) + ".pt"));
  std::ofstream(out_path("result_" + std::to_string(rank) + ".txt"))
      << result.last_joiner << ' ' << result.shadowed_steps << ' ' << net->forwards.item<double>() << ' '
      << model.engine().bucket_indices().size() << '\n';
  destroy_process_group();
  return 0;
}

// Runs one step inside join(), then `misuse`; every rank must get DdpError naming the problem.
void expect_join_error(DistributedDataParallel<JoinNet>& model, const std::function<void()>& misuse,
                       const std::string& expected) {
  std::string caught;
  try {
    model.join([&] {
      auto [x, y] = join_batch(get_rank(), 0, 0);
      torch::mse_loss(model(x), y).backward();
      misuse();
    });
  } catch (const DdpError& e) {
    caught = e.what();
  }
  log() << "caught: " << caught;
  expect(caught.find(expected) != std::string::npos, "DdpError containing '" + expected + "', got '" + caught + "'");
}

int join_misuse() {
  init_process_group(pg_options());
  JoinNet net = make_join_net(1000);
  auto model = make_model(net);
  expect_join_error(
      model,
      [] {
        auto t = torch::ones({1});
        all_reduce(t);
      },
      "ddp::all_reduce was called inside ddp::join()");
  expect_join_error(
      model, [] { barrier(); }, "ddp::barrier was called inside ddp::join()");
  expect_join_error(
      model, [] { save_checkpoint(out_path("never.pt"), JoinNet(), nullptr); }, "inside ddp::join()");
  expect_join_error(
      model,
      [&] {
        torch::NoGradGuard no_grad;
        model(torch::randn({2, 8}));
      },
      "a forward with gradients disabled (evaluation) inside ddp::join()");
  expect_join_error(
      model, [&] { model.join([] {}); }, "does not nest");
  auto t = torch::ones({1});
  all_reduce(t);  // the guard is lifted after each failed join
  expect(t.item<double>() == get_world_size(), "all_reduce after the failed joins");
  log() << "misuse ok";
  destroy_process_group();
  return 0;
}

}  // namespace

const std::map<std::string, std::function<int()>>& join_scenarios() {
  static const std::map<std::string, std::function<int()>> scenarios = {{"join-uneven", join_uneven},
                                                                        {"join-misuse", join_misuse}};
  return scenarios;
}

}  // namespace ddp::test
