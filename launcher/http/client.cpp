#include "launcher/http/client.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace ddp::launch::http {

std::string get(const std::string& host, uint16_t port, const std::string& target, std::chrono::milliseconds timeout) {
  namespace asio = boost::asio;
  namespace beast = boost::beast;
  namespace bhttp = boost::beast::http;
  const std::string where = host + ":" + std::to_string(port);
  asio::io_context io;
  beast::tcp_stream stream(io);
  asio::ip::tcp::resolver resolver(io);
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(16 << 20);
  bhttp::request<bhttp::empty_body> request(bhttp::verb::get, target, 11);
  request.set(bhttp::field::host, host);
  request.set(bhttp::field::user_agent, "ddp-launch status");
  beast::error_code failed;
  std::string step = "resolve";
  stream.expires_after(timeout);
  resolver.async_resolve(
      host, std::to_string(port), [&](beast::error_code ec, asio::ip::tcp::resolver::results_type r) {
        if (ec) return void(failed = ec);
        step = "connect";
        stream.async_connect(r, [&](beast::error_code ec2, const asio::ip::tcp::endpoint&) {
          if (ec2) return void(failed = ec2);
          step = "send";
          bhttp::async_write(stream, request, [&](beast::error_code ec3, size_t) {
            if (ec3) return void(failed = ec3);
            step = "read";
            bhttp::async_read(stream, buffer, parser, [&](beast::error_code ec4, size_t) { failed = ec4; });
          });
        });
      });
  io.run_for(timeout + std::chrono::milliseconds(500));  // the stream's deadline ends every step before this
  if (failed) throw ClientError(where + ": " + step + ": " + failed.message());
  if (!parser.is_done()) throw ClientError(where + ": no answer within " + std::to_string(timeout.count()) + " ms");
  const auto& response = parser.get();
  if (response.result_int() != 200)
    throw ClientError(where + target + ": HTTP " + std::to_string(response.result_int()));
  return response.body();
}

}  // namespace ddp::launch::http
