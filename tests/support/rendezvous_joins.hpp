// Test helpers for rendezvous::Rendezvous: a policy from the few values a test varies, and the
// plan of a join that must end seated (anything else throws, naming the outcome).
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include "launcher/rendezvous/rendezvous.hpp"

namespace ddp::launch::testing {

inline rendezvous::RendezvousPolicy policy(const cli::RendezvousConf& conf, bool store_host, int nnodes_min,
                                           int nnodes_max) {
  rendezvous::RendezvousPolicy p;
  p.leader.kind = store_host ? rendezvous::LeaderMode::Kind::kStoreHost : rendezvous::LeaderMode::Kind::kFollower;
  p.nnodes_min = nnodes_min;
  p.nnodes_max = nnodes_max;
  p.conf = conf;
  return p;
}

inline rendezvous::RoundPlan seated(rendezvous::JoinOutcome outcome) {
  if (auto* s = std::get_if<rendezvous::Seated>(&outcome)) return std::move(s->plan);
  static const char* const kNames[] = {"seated", "became a spare", "released as a spare",
                                       "stopped by the job's stop record", "interrupted"};
  throw std::logic_error(std::string("the join ended ") + kNames[outcome.index()] + ", not seated");
}

}  // namespace ddp::launch::testing
