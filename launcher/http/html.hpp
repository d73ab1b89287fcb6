// HTML text escaping for the status page: & < > " ' become entities, so any text (a program
// name, an error message) shows as text, never as markup. Pure.
#pragma once

#include <string>

namespace ddp::launch::http {

std::string html_escape(const std::string& text);

}  // namespace ddp::launch::http
