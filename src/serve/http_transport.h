// HTTP/1.1 over TCP for `jf serve` (Boost.Beast's parser over Asio): one event-loop thread serves every
// connection, so a waiting client parks no thread; the limits a public server needs (body size whatever the
// framing, header size, read timeouts, connection cap, keep-alive idle time) are enforced here, before any
// request reaches the routes. Knows nothing of the API: requests in, responses out (http_server.cpp).
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace jf {

struct HttpLimits {
  size_t max_body = 8u << 20;        // 413 past it, with or without Content-Length
  size_t max_header = 16u << 10;     // request line + header fields; 431 past it
  double header_timeout = 10;        // seconds to receive a request's header; 408 after
  double body_timeout = 30;          // seconds to receive its body once the header is in; 408 after
  double keep_alive_timeout = 5;     // an idle keep-alive connection is closed after this
  int max_connections = 512;         // open connections; one more is answered 503 and closed
  int workers = 2;                   // threads for request work too heavy for the event loop (tokenizing)
};

struct HttpRequest {
  std::string method;
  std::string target;  // as sent: path and query
  std::string path;    // without the query
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // Header value by name (case-insensitive); empty when absent.
  std::string header(const std::string& name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// One request's way back to its client. Every method may be called from any thread: the work is posted to
// the connection's event loop. Calls after the client has gone are ignored.
class Exchange {
 public:
  virtual ~Exchange() = default;
  // The whole answer; the exchange ends.
  virtual void reply(HttpResponse response) = 0;
  // A streamed answer: the head (its body ignored), then pieces, then the end.
  virtual void start_stream(HttpResponse head) = 0;
  virtual void write(std::string piece) = 0;
  virtual void end_stream() = 0;
  // Runs `fn` on the event loop (serialised with everything else of this connection).
  virtual void post(std::function<void()> fn) = 0;
  // Called once, on the event loop, if the client closes the connection before the answer has ended. Set
  // after it has gone: called at once.
  virtual void on_disconnect(std::function<void()> fn) = 0;
};

class HttpTransport {
 public:
  // Called on the event loop for each complete request; answer now or later through the exchange.
  using Handler = std::function<void(HttpRequest&&, std::shared_ptr<Exchange>)>;
  // Called on the event loop with the status of every answer (errors of the transport's own included).
  using StatusHook = std::function<void(int status)>;

  HttpTransport(HttpLimits limits, Handler handler, StatusHook on_status);
  ~HttpTransport();
  // Binds host:port (0: any free port) and starts serving. Throws jf::Error when it cannot bind.
  void start(const std::string& host, int port);
  // Stops accepting, closes every connection and joins the threads.
  void stop();
  int port() const;
  // Runs `fn` on a worker thread (parsing and tokenizing a request, which must not stall the event loop).
  void offload(std::function<void()> fn);
  int open_connections() const;

  struct Impl;  // the event loop and its connections (http_transport.cpp)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace jf
