// Rank 0's view of training: a one-line progress bar redrawn in place on a terminal, or
// plain lines every `log_every` steps when output is a pipe (ddp-launch, CI logs).
// Writes only to the stream it is given; pure formatting otherwise. Not thread-safe.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace ddp::train {

struct ProgressUpdate {
  int epoch = 0;  // 0-based
  int epochs = 0;
  int64_t step_in_epoch = 0;  // 1-based count of steps done in this epoch
  int64_t steps_per_epoch = 0;
  int64_t global_step = 0;
  double loss = 0;           // running mean over the epoch so far
  double samples_per_s = 0;  // global (all ranks)
};

enum class ProgressMode { kBar, kPlain, kNone };

// "auto" → bar on a TTY, plain otherwise; "bar", "plain", "none" force a mode.
// Returns false for an unknown setting.
bool choose_progress_mode(const std::string& setting, bool is_tty, ProgressMode& mode);

// "epoch 2/5 [########------------]  40% 123/310  4321 samples/s  loss 0.2345"
std::string format_bar(const ProgressUpdate& update, int width);
// "epoch 2/5 step 123/310 (global 743) loss 0.2345 samples/s 4321"
std::string format_plain(const ProgressUpdate& update);

class ProgressReporter {
 public:
  ProgressReporter(std::ostream& out, ProgressMode mode, int log_every);
  // Called after every optimizer step.
  void step(const ProgressUpdate& update);
  // Ends the epoch's bar and prints the epoch summary line.
  void epoch_end(int epoch, int epochs, double loss, double accuracy, double samples_per_s);
  // A free-form line (resume notice, final summary); clears a pending bar first.
  void message(const std::string& text);

 private:
  void end_bar();
  std::ostream& out_;
  ProgressMode mode_;
  int log_every_;
  bool bar_open_ = false;
};

}  // namespace ddp::train
