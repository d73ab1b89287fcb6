// Waiting for the rendezvous host's name to resolve: in Kubernetes the master pod's (or
// service's) DNS record can appear 30 s or more after the pods start. Looks the name up
// afresh (never caching an answer, nor a failure) after pauses of 250 ms doubling to 2 s, each
// plus up to half of it at random (net/backoff.hpp: a job's nodes do not ask in step), prints
// `waiting for DNS of HOST (N s)` every 5 s, and gives up at the rendezvous timeout. For
// etcd's member list, the wait ends once any member's name resolves (the client fails over
// to the others). Blocks; a stop signal (poll_signals) ends the wait.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace ddp::launch::rendezvous {

// Returns 0 once host resolves (at once for an address), or the stop signal that
// poll_signals returned. Throws LaunchError(kRendezvousFailed) after timeout_s seconds.
int wait_for_dns(const std::string& host, double timeout_s, const std::function<int()>& poll_signals);

// The same for several names (etcd's members): done once any one resolves, or at once when
// one is an address.
int wait_for_dns(const std::vector<std::string>& hosts, double timeout_s, const std::function<int()>& poll_signals);

// How many whole seconds into the wait each `waiting for DNS` line is printed: at 1 s,
// then every 5 s (1, 6, 11, ...). Pure; true when a line is due at elapsed_s given the
// last one printed at last_s (negative: none yet).
bool dns_notice_due(double elapsed_s, double last_s);

}  // namespace ddp::launch::rendezvous
