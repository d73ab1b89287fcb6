// Slurm node-list expansion and job detection.
#include <catch2/catch.hpp>

#include "launcher/base/launch_error.hpp"
#include "launcher/cli/slurm.hpp"

using namespace ddp::launch;

TEST_CASE("Slurm node lists expand like scontrol show hostnames") {
  CHECK(expand_nodelist("node1") == std::vector<std::string>{"node1"});
  CHECK(expand_nodelist("node[01-03,07]") == std::vector<std::string>{"node01", "node02", "node03", "node07"});
  CHECK(expand_nodelist("a[9-11],b2") == std::vector<std::string>{"a9", "a10", "a11", "b2"});
  CHECK(expand_nodelist("gpu[1-2]-ib") == std::vector<std::string>{"gpu1-ib", "gpu2-ib"});
  for (std::string bad : {"node[1-", "node[a-b]", "node[3-1]", "node]1[", ""})
    CHECK_THROWS_AS(expand_nodelist(bad), LaunchError);
}

TEST_CASE("a Slurm job is recognised only with all its variables") {
  auto job = slurm_job({{"SLURM_NNODES", "2"}, {"SLURM_NODEID", "1"}, {"SLURM_NODELIST", "h[3-4]"}});
  REQUIRE(job);
  CHECK(job->nnodes == 2);
  CHECK(job->node_rank == 1);
  CHECK(job->first_host == "h3");
  CHECK_FALSE(slurm_job({{"SLURM_NNODES", "2"}}));
  CHECK_FALSE(slurm_job({}));
}
