// A node's strikes kept in the job's store (docs/preflight.md "Strikes"), so that a launcher
// started again on the same node (its pod restarted after it was struck out, a wrapper loop)
// comes back with them: the key strikes/<node id> holds the Unix times of its strikes within
// the window, a JSON array, written by the node's launcher at each strike and read once before
// its first join. The node id is DDP_LAUNCH_NODE_ID, else the host name (a pod's name; set it
// to the machine's, e.g. Kubernetes' spec.nodeName, to follow the machine). Pure.
#pragma once

#include <string>
#include <vector>

#include "launcher/cli/environment.hpp"

namespace ddp::launch::rendezvous {

inline constexpr const char* kNodeIdEnvVar = "DDP_LAUNCH_NODE_ID";

// DDP_LAUNCH_NODE_ID when set and not empty, else host_name.
std::string node_id(const cli::Environment& env, const std::string& host_name);

std::string strikes_key(const std::string& node_id);  // "strikes/<node id>"

// The times within window_s of now_unix, ascending.
std::vector<double> strike_times_within(std::vector<double> unix_times, double now_unix, double window_s);

// The record's times within the window (strike_times_within); a record that is not a JSON
// array of numbers reads as none.
std::vector<double> parse_strike_times(const std::string& record, double now_unix, double window_s);
std::string format_strike_times(const std::vector<double>& unix_times);

}  // namespace ddp::launch::rendezvous
