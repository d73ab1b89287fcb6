// The pre-flight link checks' verdict (pure; docs/preflight.md "Links"). The round's nodes that
// probe form a ring in join order; each measured the link to its successor both ways and its
// clock against the store's host. A node's sends show on two links (to its successor, and from
// its predecessor's download) and so do its receives: a node both of whose sends, or both of
// whose receives, are slow is the slow end and fails (below net_fail of the links' median MB/s,
// or below net_min_mbps); one slow direction alone names the link and both its ends (a
// warning: which end is slow cannot be told). Likewise round trips (both of a node's links above
// rtt_fail x the median and the median + 1 ms), the clock offset, and whether each node reaches
// the workers' store's host. Relative checks need three
// nodes or more; with two only the absolute ones apply, as warnings.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "launcher/cli/preflight_conf.hpp"

namespace ddp::launch::preflight {

struct LinkFigures {
  double out_mbps = 0;  // this node -> the other (MB/s: 10^6 bytes a second)
  double in_mbps = 0;   // the other -> this node
  double rtt_us = 0;    // median one-byte round trip
  std::string error;    // "" when measured
};

struct ClockFigures {
  double offset_s = 0;  // the other's clock minus this node's
  double rtt_ms = 0;    // the round trip of the exchange used
  std::string error;
};

// Ring position i's report: its link to position (i + 1) % K, its clock.
struct RingReport {
  LinkFigures link;
  ClockFigures clock;
  std::string store_error;  // connecting to the workers' store's host failed ("": reached, or not asked)
};

struct LinkVerdict {
  std::map<size_t, std::string> failed;  // ring position -> "network: ..." / "clock: ..."
  std::vector<std::string> warnings;     // one line each ("network: ...")
};

// The better of two measurements of one ring position (a moment of CPU starvation on either end
// reads as a slow link; a second look that is fine clears it): per figure, a measurement that
// succeeded over one that failed, else the higher bandwidths, the lower round trip, the clock
// exchanged with the shorter round trip, the workers' store reached by either.
RingReport better_of(const RingReport& a, const RingReport& b);

// labels[i]: how position i is named ("node 2 (host-c)"). store_host: the ring position of the
// node that will host the workers' store (-1: none asked): when no other node reaches it, it is
// the one that fails; otherwise each node that cannot reach it fails.
LinkVerdict judge_links(const std::vector<RingReport>& ring, const std::vector<std::string>& labels,
                        const cli::PreflightConf& conf, long store_host = -1);

}  // namespace ddp::launch::preflight
