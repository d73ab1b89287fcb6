

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/base/signal_names.hpp"
#include "launcher/base/text.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/rendezvous/rendezvous.hpp"
#include "launcher/os/process.hpp"
#include <algorithm>
#include <fmt/format.h>
#include <limits>
#include <thread>

namespace ddp::launch::rendezvous {
namespace {

using Clock = std::chrono::steady_clock;

// How long to read a key that another launcher has written or is about to write.
constexpr store::Duration kPublishedKeyTimeout{5000};
// Seats per MULTI_SET: ~400 KB frames, far below the store's 16 MiB frame limit.
constexpr size_t kSeatsPerRequest = 4096;
// How long a restart round waits for the spares that waited after the last, once the previous
// round's nodes are back, in heartbeat intervals.
constexpr double kSpareGraceHeartbeats = 2;
// How long the leader waits for the link checks' reports beyond their sends.
constexpr double kLinkReportS = 10;
// How often a follower that probes looks for its link check while it waits for the plan.
constexpr store::Duration kLinkPoll{50};
// How often the leader of a failed round looks whether the others have read why.
constexpr std::chrono::milliseconds kPlanReadPoll{20};

[[noreturn]] void rendezvous_failed(const std::string& message) {
  throw LaunchError(exit_code::kRendezvousFailed, message);
}

// A spare waits for the job's next round as long as the job runs (its end is a record).
Clock::time_point spare_deadline() { return Clock::now() + std::chrono::hours(24 * 365 * 10); }

// Unwinds a join that ends early, from wherever it waits, to join(), which returns the outcome.
struct EndsEarly {
  JoinOutcome outcome;
};

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// A round number another launcher wrote (current_round).
int round_number(const std::string& text) {
  const auto value = parse_natural(text);
  if (!value || *value > std::numeric_limits<int>::max())
    malformed_record("round number", fmt::format("'{}' is not a round number", text));
  return static_cast<int>(*value);
}

}  // namespace

Rendezvous::Rendezvous(store::Store& job, RendezvousPolicy policy, std::function<int()> interrupted)
    : job_(job), policy_(std::move(policy)), interrupted_(std::move(interrupted)) {}

void Rendezvous::check_interrupted() {
  if (int sig = interrupted_ ? interrupted_() : 0) throw EndsEarly{Interrupted{sig}};
  if (std::optional<std::string> stop = job_.try_get(JobKeys::stop()))
    throw EndsEarly{StopRecorded{abort_from_json(*stop)}};
  if (!spare_) return;
  if (std::optional<std::string> ended = job_.try_get(JobKeys::ended())) {
    const auto code = parse_natural(*ended);
    if (!code || *code > 255) malformed_record("job end record", fmt::format("'{}' is not an exit code", *ended));
    job_.add(JobKeys::ended_seen(), 1);
    throw EndsEarly{SpareReleased{static_cast<int>(*code)}};
  }
}

// Each pass the leader asks for (link_round.hpp), until the plan is out or (an elected leader,
// looked at every heartbeat interval once answered) the leader is lost: the wait for the plan
// that follows says so.
void Rendezvous::answer_link_check(int round, long ticket, Clock::time_point deadline) {
  auto look_at_leader = Clock::now();
  for (int pass = 1; pass <= kLinkPasses && Clock::now() < deadline && !job_.check({JobKeys::plan(round)});) {
    check_interrupted();
    if (pass > 1 && elected() && Clock::now() >= look_at_leader) {
      look_at_leader = Clock::now() + seconds(policy_.conf.heartbeat_interval_s);
      const std::optional<std::string> leader = job_.try_get(JobKeys::leader(round));
      if (leader && policy_.leader.lost(*leader)) return;
    }
    const std::string peer = LinkKeys::peer(round, ticket, pass);
    if (!job_.wait({peer}, kLinkPoll)) continue;
    links_checked_ = true;
    job_.set(LinkKeys::report(round, ticket, pass),
             to_json(policy_.links->measure(link_peer_from_json(job_.get(peer, kPublishedKeyTimeout)))));
    ++pass;
  }
}

bool Rendezvous::become_spare(const NodeInfo& self, int round) {
  job_.set(JobKeys::spare(round, job_.add(JobKeys::spares(round), 1)), self.name);
  if (spare_) return false;
  spare_ = true;
  return true;
}

bool Rendezvous::wait_key(const std::string& key, Clock::time_point deadline) {
  const auto slice = std::chrono::duration_cast<store::Duration>(seconds(policy_.conf.heartbeat_interval_s));
  for (;;) {
    check_interrupted();
    auto left = std::chrono::duration_cast<store::Duration>(deadline - Clock::now());
    if (left.count() <= 0) return job_.check({key});
    if (job_.wait({key}, std::min(left, slice))) return true;
  }
}

JoinOutcome Rendezvous::join(const NodeInfo& self, int round, int restart_count, Regroup regroup) {
  try {
    check_interrupted();
    if (elected()) return join_elected(self, round, restart_count, regroup);
    if (policy_.leader.kind == LeaderMode::Kind::kStoreHost) return Seated{lead(self, round, restart_count, regroup)};
    return follow(self, round);
  } catch (EndsEarly& e) {
    return std::move(e.outcome);
  }
}

long Rendezvous::gather(const NodeInfo& self, int round, Regroup regroup) {
  const int nnodes_min = policy_.nnodes_min;
  const bool regrouping = regroup.expected > 0;
  const long enough = regrouping ? std::max(regroup.expected, nnodes_min) : policy_.nnodes_max;
  // The spares that waited join within moments of the round opening (they wait on its key); one
  // that is gone is not waited for longer than the grace.
  const long want = regrouping ? std::max<long>(regroup.expected + regroup.spares, enough) : enough;
  const double last_call_s = regrouping ? regroup.wait_s : policy_.conf.last_call_timeout_s;
  // Its ticket before the round opens: the leader is always join/1 (a waiting follower names it).
  job_.set(JobKeys::join(round, job_.add(JobKeys::ticket(round), 1)), to_json(self));
  job_.set(JobKeys::open(round), "1");
  job_.set(JobKeys::current_round(), std::to_string(round));

  const auto join_deadline = Clock::now() + seconds(policy_.conf.join_timeout_s);
  std::optional<Clock::time_point> last_call, spare_grace;
  for (;;) {
    const long count = job_.add(JobKeys::ticket(round), 0);
    if (count >= want) return count;
    if (count >= enough) {
      if (!spare_grace) spare_grace = Clock::now() + seconds(kSpareGraceHeartbeats * policy_.conf.heartbeat_interval_s);
      if (Clock::now() >= *spare_grace) return count;
    }
    if (count >= nnodes_min) {
      if (!last_call) last_call = Clock::now() + seconds(last_call_s);
      if (Clock::now() >= *last_call) return count;
    }
    if (Clock::now() >= join_deadline) {
      if (count >= nnodes_min) return count;  // enough to run: the deadline closes the round, not fails it
      fail_join_timeout(self, round, count);
    }
    auto next = last_call ? std::min(*last_call, join_deadline) : join_deadline;
    if (spare_grace) next = std::min(next, *spare_grace);
    // Wake for the join that changes the decision (MIN, then enough, then the spares), not for
    // every join: a round of K nodes is a few waits here, not K.
    wait_key(JobKeys::join(round, count < nnodes_min ? nnodes_min : count < enough ? enough : want), next);
  }
}

RoundPlan Rendezvous::lead(const NodeInfo& self, int round, int restart_count, Regroup regroup) {
  const long count = gather(self, round, regroup);
  std::vector<std::string> keys;
  for (long t = 1; t <= count; ++t) keys.push_back(JobKeys::join(round, t));
  std::vector<NodeInfo> joined;
  for (const auto& v :
       job_.multi_get(keys, std::chrono::duration_cast<store::Duration>(seconds(policy_.conf.heartbeat_timeout_s))))
    joined.push_back(node_info_from_json(v));
  if (policy_.links && !links_checked_) {
    links_checked_ = true;
    const LinkCheck& links = *policy_.links;
    const auto deadline = Clock::now() + seconds(kLinkReportS + 2 * links.conf.net_ms / 1000);
    for (const auto& w : check_links(job_, round, joined, links.measure, links.conf, deadline))
      console::launcher_notice("preflight: warn " + w);
  }
  RoundPlan plan = plan_round(joined, round, restart_count);
  publish(plan);
  if (!plan.error.empty()) {
    // Keep the store up until the other nodes have read why, so they report it too.
    const auto deadline = Clock::now() + seconds(policy_.conf.heartbeat_timeout_s);
    while (job_.add(JobKeys::plan_read(round), 0) < count - 1 && Clock::now() < deadline)
      std::this_thread::sleep_for(kPlanReadPoll);
    throw LaunchError(plan.error_code, plan.error);
  }
  if (!plan.find(self.name))  // an elected leader left itself out (its own check, its strikes)
    for (size_t k = 0; k < plan.left_out_tickets.size(); ++k)
      if (plan.left_out_tickets[k] == 1)
        throw LaunchError(plan.left_out_codes[k], "this node was left out of the job: " + plan.left_out[k]);
  return plan;
}

RoundPlan Rendezvous::plan_round(const std::vector<NodeInfo>& joined, int round, int restart_count) {
  ScreenRules rules = policy_.screen;
  if (!elected()) rules.store_host = 0;  // the leader hosts the store: join/1
  const Screened s = screen_nodes(joined, policy_.nnodes_min, rules);
  for (const auto& w : s.warnings) console::launcher_notice(w);
  if (!s.error.empty()) {
    RoundPlan failed;
    failed.round = round;
    failed.restart_count = restart_count;
    failed.error = s.error;
    failed.error_code = exit_code::kPreflightFailed;
    return failed;
  }
  // At most MAX seats: the leader (join/1) and the previous round's nodes first (they hold the
  // snapshots), then the others in join order; the rest wait as spares.
  std::vector<size_t> seated = s.kept;
  std::stable_partition(seated.begin(), seated.end(), [&](size_t i) { return i == 0 || joined[i].previous_rank >= 0; });
  std::vector<size_t> spares;
  if (seated.size() > static_cast<size_t>(policy_.nnodes_max)) {
    spares.assign(seated.begin() + policy_.nnodes_max, seated.end());
    seated.resize(static_cast<size_t>(policy_.nnodes_max));
    std::sort(seated.begin(), seated.end());
  }
  std::vector<NodeInfo> kept;
  for (size_t i : seated) kept.push_back(joined[i]);
  RoundPlan plan = make_plan(kept, round, restart_count);
  for (auto& n : plan.nodes) n.ticket = static_cast<int>(seated[static_cast<size_t>(n.ticket - 1)]) + 1;
  for (size_t i : spares) plan.spare_tickets.push_back(static_cast<int>(i) + 1);
  plan.tickets = static_cast<int>(joined.size());
  for (size_t k = 0; k < s.left_out.size(); ++k) {
    plan.left_out.push_back(s.why[k]);
    plan.left_out_tickets.push_back(static_cast<int>(s.left_out[k]) + 1);
    plan.left_out_codes.push_back(s.codes[k]);
    console::launcher_notice("left out " + s.why[k]);
  }
  return plan;
}

void Rendezvous::publish(const RoundPlan& plan) {
  if (plan.error.empty()) {
    job_.set(JobKeys::nodes(plan.round), nodes_to_json(plan));
    std::vector<std::pair<std::string, std::string>> seats;
    for (size_t k = 0; k < plan.left_out_tickets.size(); ++k)
      seats.emplace_back(JobKeys::seat(plan.round, plan.left_out_tickets[k]),
                         left_out_seat_json(plan.left_out[k], plan.left_out_codes[k]));
    for (int t : plan.spare_tickets) seats.emplace_back(JobKeys::seat(plan.round, t), spare_seat_json());
    for (const auto& n : plan.nodes) {
      seats.emplace_back(JobKeys::seat(plan.round, n.ticket), seat_to_json(n));
      if (seats.size() == kSeatsPerRequest || &n == &plan.nodes.back()) {
        job_.multi_set(seats);
        seats.clear();
      }
    }
  }
  job_.set(JobKeys::plan(plan.round), summary_to_json(plan));
  if (plan.error.empty() && !plan.left_out_tickets.empty())
    left_out_.emplace_back(plan.round, static_cast<long>(plan.left_out_tickets.size()));
}

bool Rendezvous::left_out_have_read() {
  for (const auto& [round, nodes] : left_out_)
    if (job_.add(JobKeys::left_out_read(round), 0) < nodes) return false;
  return true;
}

void Rendezvous::read_seat(const NodeInfo& self, int round, long ticket, RoundPlan& plan) {
  if (ticket > plan.tickets) return;  // joined too late: not in this round
  const std::string seat = job_.get(JobKeys::seat(round, ticket), kPublishedKeyTimeout);
  if (is_spare_seat(seat)) return;  // the round has its MAX nodes without us
  PlannedNode me = seat_from_json(seat, self);
  if (me.group_rank == 0 || elected())  // they look at every node (the workers' store, the checks)
    plan.nodes = nodes_from_json(job_.get(JobKeys::nodes(round), kPublishedKeyTimeout));
  else plan.nodes.push_back(std::move(me));
}

void Rendezvous::fail_join_timeout(const NodeInfo& self, int round, long count) {
  std::vector<std::string> keys;
  for (long t = 1; t <= count; ++t) keys.push_back(JobKeys::join(round, t));
  std::string who;
  std::vector<bool> present(static_cast<size_t>(policy_.nnodes_max), false);
  for (const auto& v : job_.multi_get(keys, kPublishedKeyTimeout)) {
    NodeInfo n = node_info_from_json(v);
    who += fmt::format("{}{} ({})", who.empty() ? "" : ", ",
                       n.requested_rank >= 0 ? fmt::format("node {}", n.requested_rank) : "a node", n.host);
    if (n.requested_rank >= 0 && n.requested_rank < policy_.nnodes_max) present[n.requested_rank] = true;
  }
  std::string missing;
  if (self.requested_rank >= 0)  // ranks are explicit: name the absent ones
    for (int r = 0; r < policy_.nnodes_min; ++r)
      if (!present[r]) missing += fmt::format("{}{}", missing.empty() ? "; missing: node " : ", ", r);
  RoundPlan failed;
  failed.round = round;
  failed.error = fmt::format(
      "rendezvous timed out after {} s: {} of {} node{} joined: {}{}; check "
      "that every node runs ddp-launch with the same --rdzv-id and "
      "store address, and that the network between them is open",
      policy_.conf.join_timeout_s, count, policy_.nnodes_min, policy_.nnodes_min == 1 ? "" : "s", who, missing);
  publish(failed);
  rendezvous_failed(failed.error);
}

[[noreturn]] void Rendezvous::follow_timed_out(const std::string& what) const {
  rendezvous_failed(
      fmt::format("rendezvous timed out after {} s waiting for {}; is node 0's "
                  "ddp-launch running with the same --rdzv-id?",
                  policy_.conf.join_timeout_s, what));
}

std::string Rendezvous::who_blocks(int round) {
  const long joined = job_.add(JobKeys::ticket(round), 0);
  std::string leader = "its leader";
  if (std::optional<std::string> first = job_.try_get(JobKeys::join(round, 1))) {
    const NodeInfo n = node_info_from_json(*first);
    leader = fmt::format("its leader {} (pid {})", n.host, n.pid);
  }
  return fmt::format("{} node{} joined, it waits for {}{}; {} has not published the plan", joined,
                     joined == 1 ? "" : "s", policy_.nnodes_min,
                     policy_.nnodes_max > policy_.nnodes_min ? fmt::format(" to {}", policy_.nnodes_max) : "", leader);
}

Rendezvous::RoundWait Rendezvous::wait_round_key(const std::string& key, int round, Clock::time_point deadline) {
  if (!elected()) return wait_key(key, deadline) ? RoundWait::kFound : RoundWait::kTimedOut;
  const auto slice = seconds(policy_.conf.heartbeat_interval_s);
  for (;;) {
    const auto until = std::min(deadline, Clock::now() + std::chrono::duration_cast<Clock::duration>(slice));
    if (wait_key(key, until)) return RoundWait::kFound;
    std::optional<std::string> leader = job_.try_get(JobKeys::leader(round));
    if (leader && policy_.leader.lost(*leader)) return job_.check({key}) ? RoundWait::kFound : RoundWait::kLeaderLost;
    if (Clock::now() >= deadline) return RoundWait::kTimedOut;
  }
}

std::optional<RoundPlan> Rendezvous::follow_one(const NodeInfo& self, int round, Clock::time_point deadline) {
  RoundWait w = wait_round_key(JobKeys::open(round), round, deadline);
  if (w == RoundWait::kLeaderLost) return std::nullopt;
  if (w == RoundWait::kTimedOut) follow_timed_out(fmt::format("round {} to open", round));
  long ticket = job_.add(JobKeys::ticket(round), 1);
  job_.set(JobKeys::join(round, ticket), to_json(self));
  if (policy_.links && !links_checked_) answer_link_check(round, ticket, deadline);
  w = wait_round_key(JobKeys::plan(round), round, deadline);
  if (w == RoundWait::kLeaderLost) {
    console::launcher_notice(fmt::format("round {}'s leader {} was lost before its plan; joining round {}", round,
                                         job_.try_get(JobKeys::leader(round)).value_or("?"), round + 1));
    return std::nullopt;
  }
  if (w == RoundWait::kTimedOut) follow_timed_out(fmt::format("the plan of round {} ({})", round, who_blocks(round)));
  RoundPlan plan = plan_from_json(job_.get(JobKeys::plan(round), kPublishedKeyTimeout));
  for (const auto& why : plan.left_out) console::launcher_notice("left out " + why);
  if (plan.error.empty()) {
    try {
      read_seat(self, round, ticket, plan);
    } catch (const LaunchError&) {  // left out: the leader still waits for us to have read why
      job_.add(JobKeys::left_out_read(round), 1);
      job_.add(JobKeys::plan_read(round), 1);
      throw;
    }
  }
  job_.add(JobKeys::plan_read(round), 1);
  if (!plan.error.empty()) throw LaunchError(plan.error_code, plan.error);
  if (plan.find(self.name)) {
    spare_ = false;
    return plan;
  }
  const cli::StrikePolicy& struck = policy_.screen.strikes;
  if (const int strikes = struck.within_window(self.strike_ages_s);
      struck.on() && strikes >= struck.count)  // nobody restarts, or keeps a seat, for it
    throw LaunchError(exit_code::kStruckOut,
                      fmt::format("this node was left out of the job: {}: struck out: its workers were the root cause "
                                  "{} times within {:g} s (--strikes {}/{:g}), kept in the job's store; the running "
                                  "job is not restarted for it, nor does it wait as a spare",
                                  node_label(self), strikes, struck.window_s, struck.count, struck.window_s));
  if (plan.nnodes < policy_.nnodes_max) {
    job_.add(JobKeys::waiting(round), 1);  // the running nodes restart to let us in
  } else if (self.requested_rank >= 0) {   // a seat of its own was asked for: a mistake, not a spare
    rendezvous_failed(fmt::format(
        "the job already runs with its maximum of {} node{}; this node (--node-rank {}) is not needed: is that rank "
        "given twice? (raise --nnodes MAX to add a node; without --node-rank a node beyond MAX waits as a hot spare)",
        policy_.nnodes_max, policy_.nnodes_max == 1 ? "" : "s", self.requested_rank));
  } else if (become_spare(self, round)) {  // no restart for us: we wait for a free seat
    throw EndsEarly{BecameSpare{round, plan.restart_count}};
  }
  return plan;
}

JoinOutcome Rendezvous::follow(const NodeInfo& self, int round) {
  const auto join_deadline = Clock::now() + seconds(policy_.conf.join_timeout_s);
  if (round < 0) {
    if (!wait_key(JobKeys::current_round(), join_deadline)) follow_timed_out("the first round to open");
    round = round_number(job_.get(JobKeys::current_round(), kPublishedKeyTimeout));
  }
  for (;; ++round) {
    std::optional<RoundPlan> plan = follow_one(self, round, spare_ ? spare_deadline() : join_deadline);
    if (plan && plan->find(self.name)) return Seated{std::move(*plan)};
  }
}

// Leaderless (etcd): the first launcher to claim a round leads it; the others follow. A
// first join (round -1) takes the round currently open, or round 0.
JoinOutcome Rendezvous::join_elected(const NodeInfo& self, int round, int restart_count, Regroup regroup) {
  const auto join_deadline = Clock::now() + seconds(policy_.conf.join_timeout_s);
  if (round < 0) {
    std::optional<std::string> current = job_.try_get(JobKeys::current_round());
    round = current ? round_number(*current) : 0;
  }
  for (;; ++round) {
    // A spare never opens a round: the job's nodes do, when they restart.
    if (!spare_ && job_.compare_set(JobKeys::leader(round), "", self.name) == self.name)
      return Seated{lead(self, round, restart_count, regroup)};
    std::optional<RoundPlan> plan = follow_one(self, round, spare_ ? spare_deadline() : join_deadline);
    if (!plan) continue;  // its leader was lost: the next round elects another
    if (plan->find(self.name)) return Seated{std::move(*plan)};
    restart_count = plan->restart_count;  // a membership change: not a restart
    regroup = {};
  }
}

}  // namespace ddp::launch::rendezvous
