#include "launcher/cli/command_line.hpp"

namespace ddp::launch::cli {
namespace {

struct CommandWord {
  const char* word;
  Command command;
};

constexpr CommandWord kCommands[] = {
    {"status", Command::kStatus}, {"preflight", Command::kPreflight},    {"exec", Command::kExec},
    {"__agent", Command::kAgent}, {"__nccl-probe", Command::kNcclProbe},
};

}  // namespace

CommandLine split_command(const std::vector<std::string>& args) {
  if (!args.empty())
    for (const CommandWord& c : kCommands)
      if (args[0] == c.word) return {c.command, std::vector<std::string>(args.begin() + 1, args.end())};
  return {Command::kLaunch, args};
}

}  // namespace ddp::launch::cli
