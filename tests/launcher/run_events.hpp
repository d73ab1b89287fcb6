// The events of a launcher run for the launcher tests: every line of the events.jsonl of the
// run directories under --log-dir, parsed as JSON, in file order (docs/events.md).
#pragma once

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/test_support.hpp"

namespace ddp::test {

inline std::vector<nlohmann::json> run_events(const std::string& log_dir) {
  std::vector<nlohmann::json> events;
  for (const auto& e : std::filesystem::directory_iterator(log_dir)) {
    std::istringstream lines(read_file(e.path().string() + "/events.jsonl"));
    for (std::string line; std::getline(lines, line);) events.push_back(nlohmann::json::parse(line));
  }
  return events;
}

}  // namespace ddp::test
