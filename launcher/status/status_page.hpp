// The status page at /: one self-contained HTML document (inline CSS and script; no CDN, no
// external font; works offline) with the job header, one row per rank, a step-time chart per
// rank and the recent events, rendered from the board when served and refreshed from
// /status.json every 1.5 s by its script. Every text it shows is escaped (http/html.hpp on
// the server, textContent in the script): a program name or an error message holding HTML
// shows as text. Pure.
#pragma once

#include <string>

#include "launcher/report/status_board.hpp"

namespace ddp::launch::status {

std::string status_page(const report::StatusBoard& board, double now_unix_s);

}  // namespace ddp::launch::status
