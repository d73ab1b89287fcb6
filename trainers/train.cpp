// train: distributed classifier trainer on libddp. Thin main: parse options (bad ones: one
// error line, exit 2), then run_training under ddp::run, which records an escaping exception
// in TORCHELASTIC_ERROR_FILE for ddp-launch's failure report. Bad data: one line (and the
// error file under a launcher), exit 2.
//   ddp-launch --nproc_per_node=4 build/trainers/train --epochs 5
#include <cstdlib>
#include <iostream>

#include <ddp/run.hpp>

#include "csv_table.hpp"
#include "train_options.hpp"
#include "trainer.hpp"

int main(int argc, char** argv) {
  const auto parsed = ddp::train::parse_train_options(argc, argv, std::cout, std::cerr);
  if (parsed.exit_code >= 0) return parsed.exit_code;
  return ddp::run(argc, argv, [&](int, char**) -> int {
    try {
      return ddp::train::run_training(parsed.options);
    } catch (const ddp::train::CsvError& e) {
      const char* error_file = std::getenv("TORCHELASTIC_ERROR_FILE");
      if (error_file && *error_file) {
        ddp::write_error_file("CsvError", e.what());  // also logs it, rank-prefixed
      } else {
        std::cerr << "train: error: " << e.what() << '\n';
      }
      return 2;
    }
  });
}
