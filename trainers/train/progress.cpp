#include "progress.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace ddp::train {

bool choose_progress_mode(const std::string& setting, bool is_tty, ProgressMode& mode) {
  if (setting == "auto") {
    mode = is_tty ? ProgressMode::kBar : ProgressMode::kPlain;
  } else if (setting == "bar") {
    mode = ProgressMode::kBar;
  } else if (setting == "plain") {
    mode = ProgressMode::kPlain;
  } else if (setting == "none") {
    mode = ProgressMode::kNone;
  } else {
    return false;
  }
  return true;
}

std::string format_bar(const ProgressUpdate& u, int width) {
  const double fraction =
      u.steps_per_epoch > 0 ? std::clamp(double(u.step_in_epoch) / double(u.steps_per_epoch), 0.0, 1.0) : 0.0;
  const int filled = static_cast<int>(fraction * width + 0.5);
  return fmt::format("epoch {}/{} [{}{}] {:3.0f}% {}/{}  {:.0f} samples/s  loss {:.4f}", u.epoch + 1, u.epochs,
                     std::string(filled, '#'), std::string(width - filled, '-'), fraction * 100, u.step_in_epoch,
                     u.steps_per_epoch, u.samples_per_s, u.loss);
}

std::string format_plain(const ProgressUpdate& u) {
  return fmt::format("epoch {}/{} step {}/{} (global {}) loss {:.4f} samples/s {:.0f}", u.epoch + 1, u.epochs,
                     u.step_in_epoch, u.steps_per_epoch, u.global_step, u.loss, u.samples_per_s);
}

ProgressReporter::ProgressReporter(std::ostream& out, ProgressMode mode, int log_every)
    : out_(out), mode_(mode), log_every_(std::max(1, log_every)) {}

void ProgressReporter::step(const ProgressUpdate& update) {
  switch (mode_) {
    case ProgressMode::kBar: {  // at most ~100 redraws per epoch, always the last step
      const int64_t every = std::max<int64_t>(1, update.steps_per_epoch / 100);
      if (update.step_in_epoch % every != 0 && update.step_in_epoch != update.steps_per_epoch) break;
      out_ << '\r' << format_bar(update, 30) << "\x1b[K" << std::flush;
      bar_open_ = true;
      break;
    }
    case ProgressMode::kPlain:
      if (update.step_in_epoch % log_every_ == 0) out_ << format_plain(update) << '\n' << std::flush;
      break;
    case ProgressMode::kNone: break;
  }
}

void ProgressReporter::epoch_end(int epoch, int epochs, double loss, double accuracy, double samples_per_s) {
  if (mode_ == ProgressMode::kNone) return;
  end_bar();
  out_ << fmt::format("epoch {}/{} done: loss {:.4f} val_accuracy {:.2f}% samples/s {:.0f}", epoch + 1, epochs, loss,
                      accuracy * 100, samples_per_s)
       << '\n'
       << std::flush;
}

void ProgressReporter::message(const std::string& text) {
  end_bar();
  out_ << text << '\n' << std::flush;
}

void ProgressReporter::end_bar() {
  if (bar_open_) out_ << '\n';
  bar_open_ = false;
}

}  // namespace ddp::train
