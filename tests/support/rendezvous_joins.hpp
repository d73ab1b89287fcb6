// Test helpers for multinode::Rendezvous: a policy from the few values a test varies, and the
// plan of a join that must end seated (anything else throws, naming the outcome).
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include "launcher/multinode/rendezvous.hpp"

namespace ddp::launch::testing {

inline multinode::RendezvousPolicy policy(const cli::RendezvousConf& conf, bool store_host, int nnodes_min,
                                          int nnodes_max) {
  multinode::RendezvousPolicy p;
  p.leader.kind = store_host ? multinode::LeaderMode::Kind::kStoreHost : multinode::LeaderMode::Kind::kFollower;
  p.nnodes_min = nnodes_min;
  p.nnodes_max = nnodes_max;
  p.conf = conf;
  return p;
}

inline multinode::RoundPlan seated(multinode::JoinOutcome outcome) {
  if (auto* s = std::get_if<multinode::Seated>(&outcome)) return std::move(s->plan);
  static const char* const kNames[] = {"seated", "became a spare", "released as a spare",
                                       "stopped by the job's stop record", "interrupted"};
  throw std::logic_error(std::string("the join ended ") + kNames[outcome.index()] + ", not seated");
}

}  // namespace ddp::launch::testing
