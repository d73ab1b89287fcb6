// The multi-node agent's class (rendezvous_rounds.hpp says what it does), shared by the files
// that define its parts: rendezvous_rounds.cpp (the rounds: store, join, run), ..._settle.cpp
// (how a round ends for this node: restart or the job's end), ..._leave.cpp (leaving the job
// through the store: acknowledgements, stop records, the leader's last wait) and ..._checks.cpp
// (this node's strikes and link measurements). Internal to those files.
#pragma once

#include "launcher/base/clock.hpp"
#include "launcher/base/exit_status.hpp"
#include "launcher/base/host_port.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/base/signal_names.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/rendezvous/dns_wait.hpp"
#include "launcher/rendezvous/etcd_link.hpp"
#include "launcher/rendezvous/job_store_link.hpp"
#include "launcher/rendezvous/rendezvous_rounds.hpp"
#include "launcher/rendezvous/rendezvous.hpp"
#include "launcher/rendezvous/round_check.hpp"
#include "launcher/rendezvous/round_events.hpp"
#include "launcher/rendezvous/strike_record.hpp"
#include "launcher/node/node_session.hpp"
#include "launcher/node/round_source.hpp"
#include "launcher/preflight/node_check.hpp"
#include "launcher/node/worker_launches.hpp"
#include "launcher/node/worker_store.hpp"
#include "launcher/os/ports.hpp"
#include "launcher/preflight/link_probe.hpp"
#include "launcher/report/event_log.hpp"
#include "launcher/report/failure_report.hpp"
#include "launcher/report/termination_log.hpp"
#include "launcher/status/status_endpoint.hpp"
#include "launcher/store/protocol.hpp"
#include "launcher/worker/socket_interface.hpp"
#include <csignal>
#include <fmt/format.h>
#include <memory>
#include <unistd.h>

namespace ddp::launch::rendezvous::rounds {

using std::chrono::milliseconds;

inline constexpr std::chrono::milliseconds kBarrierTick{100};  // exit barrier: react quickly

inline milliseconds ms(double seconds) { return milliseconds(static_cast<long long>(seconds * 1000)); }

// One joined round: its plan and this node's place in it.
struct Round {
  RoundPlan plan;
  PlannedNode me;
  int number() const { return plan.round; }
  int rank() const { return me.group_rank; }
};

// What the next join needs to know.
struct NextRound {
  int round = 0;  // a follower's first join passes -1: the round currently open
  int restart_count = 0;
  int previous_rank = -1;
  int expected_nodes = 0;  // how many nodes the next round waits for (0: up to nnodes_max)
  int spares = 0;          // and how many hot spares that waited after the last round
};

// How an attempt ended for this node: an exit code, or the round's abort record (restart
// or final). Neither: the store was lost.
struct Settled {
  std::optional<int> exit_code;
  std::optional<AbortRecord> abort;
};

class RendezvousRounds : public node::RoundSource {
 public:
  RendezvousRounds(const node::JobConfig& job, const MultiNodeSpec& spec, const cli::Environment& env,
                   const supervise::StopInputSpec& stop_input)
      : job_(job),
        spec_(spec),
        env_(env),
        session_(job, env, {spec.node_rank, spec.node_rank, spec.nnodes_max}, stop_input),
        stops_(session_.stops()),
        events_(session_.events()),
        board_(session_.board()),
        layout_(session_.layout()) {}

  // The agent loop over this node's rounds, then the job's end (also when the launcher fails).
  int run();

  // RoundSource: the store and this node's checks; each round joined and started; its end
  // settled with the other nodes.
  std::optional<int> prepare() override;
  std::variant<node::NextAttempt, int> next_attempt() override;
  std::optional<int> settle(const report::AttemptResult& result) override;

 private:
  std::optional<int> reach_store();
  std::vector<std::string> store_hosts() const;
  void prepare_node();
  NodeInfo self_info(int previous_rank);
  std::string advertised_addr() const;
  JoinOutcome join_round(const NextRound& next);
  RendezvousPolicy rendezvous_policy();
  node::NextAttempt start_round(const Round& r);
  RoundCheckContext round_check_context();
  Settled settle_round(const Round& r, const report::AttemptResult& result);
  Settled after_success(const Round& r);
  Settled after_failure(const Round& r, const report::AttemptResult& result);
  std::optional<Settled> symptom_of_known_cause(const Round& r, const report::WorkerOutcome& root);
  int after_interrupt(const Round& r, int signal);
  int stopped_between_rounds(const std::optional<Round>& last, int signal);
  int job_stopped(const std::optional<Round>& last, const AbortRecord& stop);
  void publish_job_stop(const AbortRecord& stop);
  void acknowledge(const Round& r);
  void leave(const Round& r, int exit_code);
  void record_strike(const Round& r, const AbortRecord& abort);
  void load_strikes();
  void wait_as_spare(int round);
  void start_probe();
  int live_spares(int round);
  preflight::RingReport measure_links(const LinkPeer& peer);
  int spare_released(int exit_code);
  std::optional<AbortRecord> read_abort(int round);
  std::optional<int> conclude(const Round& r, const Settled& settled, NextRound& next);
  std::optional<std::string> check(const Round& r);
  void wait_for_others_to_leave(const Round& r);

  const node::JobConfig& job_;
  const MultiNodeSpec& spec_;
  const cli::Environment& env_;
  cli::Environment worker_env_;    // env_ and the workers' socket interface (worker/socket_interface)
  node::NodeSession session_;      // this node's services, kept across rounds
  supervise::StopSignals& stops_;  // the job's signals, and the waits between rounds they end
  report::EventLog& events_;
  report::StatusBoard& board_;
  worker::RunLayout& layout_;
  JobStoreLink store_;   // the agent store (hosted here, or joined) or etcd
  RoundFindings state_;  // this round's record, a lost store or an unreadable record
  std::optional<std::chrono::system_clock::time_point> abort_seen_;  // this round's record first read
  int acknowledged_round_ = -1;
  int rendezvous_signal_ = 0;         // the stop signal that interrupted a rendezvous
  preflight::NodeCheck preflight_;    // --preflight's outcome here, sent with every join
  std::vector<double> strike_times_;  // this node's strikes (Unix times), sent with every join (as ages)
  std::string node_id_;               // their key in the job's store (strike_record.hpp)
  bool strike_ = false;               // this round's abort record is this node's own failure: a strike once logged
  std::unique_ptr<preflight::ProbeServer> probe_;  // --preflight: the link checks' probe, until the first plan
  std::optional<Rendezvous> rendezvous_;           // from the first join on
  NextRound next_;                                 // how the next join gathers
  std::optional<Round> last_;                      // the round joined last
  std::unique_ptr<AbortWaitThread> abort_thread_;  // last: stopped before the supervisor goes
};

}  // namespace ddp::launch::rendezvous::rounds
