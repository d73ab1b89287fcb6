// Warm the program, not only the library (docs/warm-restarts.md, "The standby point"). Under
// ddp-launch with warm restarts a standby of a program linked with libddp waits for its worker
// before main(). A program that calls ddp::standby_point() makes its standbys run main() up to
// that call instead: everything above it (reading data, building the model, warming the
// allocator) is done before a failure happens, and a restart continues from the point.
//
// Above the point the code must be the same for every rank and every attempt: no rank, no
// store, no process group, no device, no output the user should see (a standby's output is
// shown only when it fails). In a standby the worker's variables (RANK, WORLD_SIZE,
// MASTER_ADDR, ...) are unset there, and init_process_group / worker_env() throw ConfigError.
// Call it once, on every path, before the first of those (a program that never reaches it
// exits in its standby, and after three such exits restarts are cold, with one notice).
#pragma once

namespace ddp {

// In a standby: says ready, blocks until the launcher hands it a worker, becomes that worker
// (environment, cwd, stdin/stdout/stderr) and returns. Anywhere else (a cold worker, no
// launcher, a second call): returns at once.
void standby_point();

}  // namespace ddp
