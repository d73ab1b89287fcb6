#include "launcher/cli/host_flags.hpp"

#include <CLI/CLI.hpp>

namespace ddp::launch::cli {

void define_host_list_flags(CLI::App& app, HostsOptions& h) {
  app.add_option("--hostfile", h.hostfile,
                 "Run on the hosts listed in FILE (host slots=N, host slots=N max_slots=M, or host:N; # "
                 "comments), one agent per host over ssh; docs/hosts.md");
  app.add_option("--hosts", h.hosts, "Run on these hosts over ssh: h1:4,h2:4 (a bare host offers 1 slot)");
  app.add_option("--include", h.include, "Only these hosts or slots of the host list: h1:0,2@h2 (DeepSpeed's syntax)");
  app.add_option("--exclude", h.exclude, "Leave these hosts or slots of the host list out: h1:0,2@h2");
  app.add_option("--ssh-port,--ssh_port", h.ssh_port, "The port of sshd on every host (default: ssh's own)")
      ->check(CLI::Range(1, 65535));
  app.add_option("--ssh-option,--ssh_option", h.ssh_options,
                 "An ssh -o option for every connection, e.g. IdentityFile=~/.ssh/k (repeatable; added to "
                 "ours, never replacing ~/.ssh/config)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);  // one value per --ssh-option: PROGRAM after it stays PROGRAM
  app.add_option("--ssh-fanout,--ssh_fanout", h.ssh_fanout, "ssh connections opened at once (default 32)")
      ->check(CLI::Range(1, 4096));
}

void define_host_flags(CLI::App& app, HostsOptions& h) {
  define_host_list_flags(app, h);
  app.add_option("--env-forward,--env_forward", h.env_forward,
                 "Variables (names or prefixes) sent to every host besides the defaults NCCL_, CUDA_, TORCH_, "
                 "PYTHON, OMP_, UCX_, HF_, WANDB_ (none first: drop those); MASTER_* and PET_* never");
  app.add_option("--env-file,--env_file", h.env_file, "KEY=VALUE lines set on every host (they win)");
  app.add_option("--remote-launcher,--remote_launcher", h.remote_launcher,
                 "Path of ddp-launch on the hosts (default: the same path as here)");
}

}  // namespace ddp::launch::cli
