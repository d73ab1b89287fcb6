// GPU selection: counting, CUDA_VISIBLE_DEVICES masking, --devices, isolation, errors.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include "launcher/worker/devices.hpp"
#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"

using namespace ddp::launch;
using namespace ddp::launch::cli;
using namespace ddp::launch::worker;

namespace {

DeviceInputs inputs(std::optional<std::string> cvd, std::optional<int> driver, int cpus = 16) {
  DeviceInputs in;
  in.cuda_visible_devices = std::move(cvd);
  in.driver_count = [driver] { return driver; };
  in.cpu_count = cpus;
  return in;
}

DeviceSpec with_nproc(const std::string& nproc) {
  DeviceSpec o;
  o.nproc = parse_nproc(nproc);
  return o;
}

int error_code_of(const DeviceSpec& o, const DeviceInputs& in) {
  try {
    plan_devices(o, in);
  } catch (const LaunchError& e) {
    return e.exit_code();
  }
  return 0;
}

}  // namespace

TEST_CASE("a plain count needs no GPU and leaves CUDA_VISIBLE_DEVICES alone") {
  bool asked = false;
  DeviceInputs in = inputs("0,1", 2);
  in.driver_count = [&] {
    asked = true;
    return std::optional<int>(2);
  };
  auto plan = plan_devices(with_nproc("4"), in);
  CHECK(plan.nproc == 4);
  CHECK_FALSE(plan.uses_gpus);
  CHECK_FALSE(asked);  // the driver is never loaded for CPU jobs
  for (const auto& v : plan.visible_devices) CHECK_FALSE(v);
}

TEST_CASE("gpu counts the visible devices") {
  CHECK(plan_devices(with_nproc("gpu"), inputs(std::nullopt, 8)).nproc == 8);
  CHECK(plan_devices(with_nproc("gpu"), inputs("3,5", 2)).nproc == 2);
  CHECK(plan_devices(with_nproc("gpu"), inputs("3,5", std::nullopt)).nproc == 2);  // no driver: trust the mask
  CHECK(plan_devices(with_nproc("gpu"), inputs("0,1,2,3", 1)).nproc == 1);         // driver knows better
  CHECK(error_code_of(with_nproc("gpu"), inputs(std::nullopt, std::nullopt)) == exit_code::kBadDevices);
  CHECK(error_code_of(with_nproc("gpu"), inputs("", 0)) == exit_code::kBadDevices);
}

TEST_CASE("auto falls back to the CPU count without GPUs") {
  CHECK(plan_devices(with_nproc("auto"), inputs(std::nullopt, std::nullopt, 6)).nproc == 6);
  CHECK(plan_devices(with_nproc("auto"), inputs(std::nullopt, 2, 6)).nproc == 2);
  CHECK(plan_devices(with_nproc("cpu"), inputs(std::nullopt, 2, 6)).nproc == 6);
}

TEST_CASE("devices flag selects among the visible devices") {
  auto o = with_nproc("gpu");
  o.devices = std::vector<int>{1, 3};
  auto plan = plan_devices(o, inputs("4,5,6,7", 4));
  CHECK(plan.nproc == 2);
  CHECK(plan.uses_gpus);
  CHECK(plan.visible_devices == std::vector<std::optional<std::string>>{"5,7", "5,7"});
}

TEST_CASE("isolation gives each worker one device") {
  auto o = with_nproc("2");
  o.virtual_local_rank = true;
  auto plan = plan_devices(o, inputs("4,5,6", 3));
  CHECK(plan.local_rank_zero);
  CHECK(plan.visible_devices == std::vector<std::optional<std::string>>{"4", "5"});
  o.devices = std::vector<int>{2, 0};
  plan = plan_devices(o, inputs("4,5,6", 3));
  CHECK(plan.visible_devices == std::vector<std::optional<std::string>>{"6", "4"});
}

TEST_CASE("more workers than GPUs in a GPU mode is a clear error") {
  auto o = with_nproc("4");
  o.devices = std::vector<int>{0, 1};
  CHECK_THROWS_WITH(plan_devices(o, inputs(std::nullopt, 8)),
                    Catch::Contains("4 workers") && Catch::Contains("--devices selects only 2"));
  auto iso = with_nproc("3");
  iso.virtual_local_rank = true;
  CHECK_THROWS_WITH(plan_devices(iso, inputs("0,1", std::nullopt)),
                    Catch::Contains("only 2 GPUs are visible") && Catch::Contains("CUDA_VISIBLE_DEVICES=0,1"));
  auto out_of_range = with_nproc("1");
  out_of_range.devices = std::vector<int>{5};
  CHECK_THROWS_WITH(plan_devices(out_of_range, inputs(std::nullopt, 2)), Catch::Contains("GPU 5"));
}

TEST_CASE("CUDA_VISIBLE_DEVICES parsing keeps UUIDs and ignores empty items") {
  CHECK(split_visible_devices("GPU-abc,1") == std::vector<std::string>{"GPU-abc", "1"});
  CHECK(split_visible_devices("").empty());
  CHECK(split_visible_devices("0,,2") == std::vector<std::string>{"0", "2"});
}

TEST_CASE("counting GPUs honours an empty CUDA_VISIBLE_DEVICES") {
  // Each test case runs in its own process (catch_discover_tests), and the driver reads the
  // variable once, at cuInit: with every device hidden the count is 0 (driver present) or
  // nullopt (no driver), never a device nor a failure.
  ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
  auto n = count_cuda_devices();
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  CHECK((!n || *n == 0));
}
