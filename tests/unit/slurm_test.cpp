// Slurm node-list expansion and job detection.
#include <catch2/catch.hpp>

#include "launcher/base/launch_error.hpp"
#include "launcher/cli/slurm.hpp"

using namespace ddp::launch;
using namespace ddp::launch::cli;

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

// The variables of a real srun -N2 -w n2,n3 step inside a three-node sbatch job (Slurm
// 22.05, recorded from the tests/slurm cluster): the master is the step's first node, n2.
TEST_CASE("a Slurm step on part of its allocation takes the step's nodes, not the job's") {
  Environment step{{"SLURM_JOB_NODELIST", "n[1-3]"},  {"SLURM_NODELIST", "n[1-3]"},
                   {"SLURM_JOB_NUM_NODES", "3"},      {"SLURM_NNODES", "2"},
                   {"SLURM_STEP_NUM_NODES", "2"},     {"SLURM_NODEID", "1"},
                   {"SLURM_STEP_NODELIST", "n[2-3]"}, {"SLURM_PROCID", "1"}};
  auto job = slurm_job(step);
  REQUIRE(job);
  CHECK(job->nnodes == 2);
  CHECK(job->node_rank == 1);
  CHECK(job->first_host == "n2");
  // The batch shell itself (no step variables): the job's.
  auto batch = slurm_job({{"SLURM_JOB_NODELIST", "n[1-3]"}, {"SLURM_NNODES", "3"}, {"SLURM_NODEID", "0"}});
  REQUIRE(batch);
  CHECK(batch->nnodes == 3);
  CHECK(batch->first_host == "n1");
}
