#include "serve/http_transport.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <chrono>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "base/error.h"
#include "serve/request.h"

namespace jf {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

// A stalled reader (a client that stops reading a stream) is dropped after this long.
constexpr auto kWriteTimeout = std::chrono::seconds(60);
// After an error answer the connection reads and drops what the client still sends for this long, so the
// client sees the answer instead of a reset (nginx's lingering close); memory stays constant.
constexpr auto kLinger = std::chrono::seconds(2);

std::chrono::milliseconds seconds(double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1000)); }

bool iequals(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// How the end of a body is marked: its length, chunked framing, or (HTTP/1.0 streams) the connection's close.
enum class Framing { Length, Chunked, Close };

// keep_alive_s >= 0: the connection stays open that many seconds (said in Keep-Alive, so that clients stop
// reusing it before the server closes it); < 0: it closes after this answer.
std::string head_text(const HttpResponse& r, double keep_alive_s, Framing framing, bool http11) {
  std::string h = http11 ? "HTTP/1.1 " : "HTTP/1.0 ";
  h += std::to_string(r.status) + " " + std::string(http::obsolete_reason(static_cast<http::status>(r.status))) + "\r\n";
  h += "Content-Type: " + r.content_type + "\r\n";
  for (const auto& [k, v] : r.headers) h += k + ": " + v + "\r\n";
  if (framing == Framing::Chunked) h += "Transfer-Encoding: chunked\r\n";
  if (framing == Framing::Length) h += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  if (keep_alive_s >= 0) h += "Connection: keep-alive\r\nKeep-Alive: timeout=" + std::to_string(static_cast<int>(keep_alive_s)) + "\r\n";
  else h += "Connection: close\r\n";
  return h + "\r\n";
}

template <class Message>
size_t header_bytes(const Message& m) {
  size_t n = m.target().size() + m.method_string().size() + 12;
  for (const auto& f : m) n += f.name_string().size() + f.value().size() + 4;
  return n;
}

std::string error_text(int status, const std::string& message) {
  HttpResponse r;
  r.status = status;
  r.body = error_body(status, message).dump();
  if (status == 503) r.headers.push_back({"Retry-After", "1"});
  return head_text(r, -1, Framing::Length, true) + r.body;
}

}  // namespace

std::string HttpRequest::header(const std::string& name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) return v;
  return {};
}

// (Members in destruction order's reverse: connections still queued in `ioc` decrement `open` as they go.)
struct HttpTransport::Impl {
  HttpLimits limits;
  Handler handler;
  StatusHook on_status;
  std::atomic<int> open{0};
  int port = 0;
  net::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  net::steady_timer accept_retry{ioc};
  std::optional<net::thread_pool> workers;
  std::thread loop;

  void accept();
  void refuse(tcp::socket& s);
};

namespace {

class Connection;

class ExchangeImpl : public Exchange, public std::enable_shared_from_this<ExchangeImpl> {
 public:
  ExchangeImpl(std::weak_ptr<Connection> conn, net::any_io_executor ex) : conn_(std::move(conn)), ex_(std::move(ex)) {}
  void reply(HttpResponse response) override;
  void start_stream(HttpResponse head) override;
  void write(std::string piece) override;
  void end_stream() override;
  void post(std::function<void()> fn) override { net::post(ex_, std::move(fn)); }
  void on_disconnect(std::function<void()> fn) override {
    {
      std::lock_guard lock(mu_);
      if (over_) return;  // answered already: holding `fn` would only keep what it holds alive
      if (!gone_) {
        on_gone_ = std::move(fn);
        return;
      }
    }
    post(std::move(fn));
  }
  // Event loop: the client went away before the answer ended.
  void disconnected() {
    std::function<void()> fn;
    {
      std::lock_guard lock(mu_);
      gone_ = true;
      fn = std::move(on_gone_);
      on_gone_ = nullptr;
    }
    if (fn) fn();
  }
  // Event loop: the answer ended; what the callback holds is let go.
  void ended() {
    std::lock_guard lock(mu_);
    over_ = true;
    on_gone_ = nullptr;
  }

 private:
  template <class F>
  void on_loop(F f);
  std::weak_ptr<Connection> conn_;
  net::any_io_executor ex_;
  std::mutex mu_;
  bool gone_ = false, over_ = false;
  std::function<void()> on_gone_;
};

// One TCP connection: reads requests one after another (keep-alive), hands each to the handler, writes
// the answers in order. Everything runs on the event loop.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, HttpTransport::Impl& t) : stream_(std::move(socket)), deadline_(stream_.get_executor()), t_(t) {
    t_.open++;
  }
  ~Connection() { t_.open--; }
  void start() { read_header(); }

  const ExchangeImpl* current() const { return exchange_.get(); }

  void send_whole(const HttpResponse& r) {
    if (!exchange_) return;
    t_.on_status(r.status);
    enqueue(head_text(r, keep_alive_seconds(), Framing::Length, http11_) + r.body);
    ending_ = true;
    flush();
  }
  void send_head(const HttpResponse& r) {
    if (!exchange_) return;
    t_.on_status(r.status);
    chunked_ = http11_;
    if (!chunked_) keep_alive_ = false;  // HTTP/1.0: the end of the stream is the end of the connection
    enqueue(head_text(r, keep_alive_seconds(), chunked_ ? Framing::Chunked : Framing::Close, http11_));
    flush();
  }
  double keep_alive_seconds() const { return keep_alive_ ? t_.limits.keep_alive_timeout : -1; }

  void send_piece(const std::string& piece) {
    if (!exchange_ || piece.empty()) return;
    if (!chunked_) return enqueue(piece), flush();
    char size[20];
    std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
    enqueue(size + piece + "\r\n");
    flush();
  }
  void send_end() {
    if (!exchange_) return;
    if (chunked_) enqueue("0\r\n\r\n");
    ending_ = true;
    flush();
  }

 private:
  void read_header() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(std::min<size_t>(t_.limits.max_header, UINT32_MAX)));
    parser_->body_limit(t_.limits.max_body);
    arm(first_ ? t_.limits.header_timeout : t_.limits.keep_alive_timeout);
    http::async_read_header(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
      self->on_header(self->disarm(ec));
    });
  }

  // Read deadlines: a timer that cancels the read, so that the connection is still there to answer 408
  // (the stream's own timeout would close it).
  void arm(double secs) {
    timed_out_ = false;
    deadline_.expires_after(seconds(secs));
    deadline_.async_wait([weak = weak_from_this()](beast::error_code ec) {
      auto self = weak.lock();
      if (ec || !self) return;
      self->timed_out_ = true;
      beast::error_code ignored;
      self->stream_.socket().cancel(ignored);
    });
  }
  beast::error_code disarm(beast::error_code ec) {
    deadline_.cancel();
    return timed_out_ && ec == net::error::operation_aborted ? beast::error::timeout : ec;
  }

  void on_header(beast::error_code ec) {
    if (ec) {
      const bool nothing = buffer_.size() == 0 && !parser_->got_some();
      if (nothing || ec == http::error::end_of_stream || ec == http::error::partial_message) return close();
      return refuse_request(ec);
    }
    // Beast checks its header limit only while the header's end is still to come: a large header that
    // arrives in one read passes it, so it is measured again here.
    if (header_bytes(parser_->get()) > t_.limits.max_header) return refuse_request(http::error::header_limit);
    first_ = false;
    if (parser_->is_done()) return dispatch();
    if (iequals(std::string(parser_->get()[http::field::expect]), "100-continue")) {
      stream_.expires_after(kWriteTimeout);
      auto msg = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
      net::async_write(stream_, net::buffer(*msg), [self = shared_from_this(), msg](beast::error_code e, size_t) {
        if (e) return self->close();
        self->stream_.expires_never();
        self->read_body();
      });
      return;
    }
    read_body();
  }

  void read_body() {
    arm(t_.limits.body_timeout);
    http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code e, size_t) {
      const beast::error_code ec = self->disarm(e);
      if (ec == http::error::partial_message || ec == net::error::connection_reset || ec == net::error::eof) return self->close();
      if (ec) return self->refuse_request(ec);
      self->dispatch();
    });
  }

  // A request the transport answers itself, then closes: too large, too slow, or malformed.
  void refuse_request(beast::error_code ec) {
    int status = 400;
    std::string why = "malformed HTTP request (" + ec.message() + ")";
    if (ec == http::error::body_limit) status = 413, why = "the request body is larger than the server's limit (" + std::to_string(t_.limits.max_body) + " bytes)";
    else if (ec == http::error::header_limit) status = 431, why = "the request header is larger than the server's limit (" + std::to_string(t_.limits.max_header) + " bytes)";
    else if (ec == beast::error::timeout) status = 408, why = "the request did not arrive in time";
    parser_.reset();
    t_.on_status(status);
    keep_alive_ = false;
    exchange_ = nullptr;
    ending_ = true;
    closing_ = true;
    enqueue(error_text(status, why));
    flush();
  }

  void dispatch() {
    auto& m = parser_->get();
    HttpRequest req;
    req.method = std::string(m.method_string());
    req.target = std::string(m.target());
    req.path = req.target.substr(0, req.target.find('?'));
    for (const auto& f : m) req.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    req.body = std::move(m.body());
    keep_alive_ = m.keep_alive();
    http11_ = m.version() >= 11;
    parser_.reset();
    stream_.expires_never();
    ending_ = chunked_ = false;
    exchange_ = std::make_shared<ExchangeImpl>(weak_from_this(), stream_.get_executor());
    watch_disconnect();
    t_.handler(std::move(req), exchange_);
  }

  // While an answer is pending, a readable socket with nothing to read means the client has gone (a
  // pipelined next request also makes it readable: then stop watching).
  void watch_disconnect() {
    stream_.socket().async_wait(tcp::socket::wait_read, [self = shared_from_this(), ex = exchange_](beast::error_code ec) {
      if (ec || self->exchange_ != ex) return;
      char byte;
      const ssize_t n = ::recv(self->stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) self->lost();
    });
  }

  void enqueue(std::string bytes) { outbox_.push_back(std::move(bytes)); }

  void flush() {
    if (writing_ || dead_) return;
    if (outbox_.empty()) {
      if (ending_) exchange_done();
      return;
    }
    writing_ = true;
    stream_.expires_after(kWriteTimeout);
    net::async_write(stream_, net::buffer(outbox_.front()), [self = shared_from_this()](beast::error_code ec, size_t) {
      self->writing_ = false;
      self->outbox_.pop_front();
      if (ec || self->dead_) return self->lost();
      self->stream_.expires_never();
      self->flush();
    });
  }

  void exchange_done() {
    if (exchange_) exchange_->ended();
    exchange_ = nullptr;
    ending_ = false;
    beast::error_code ignored;
    stream_.socket().cancel(ignored);  // the disconnect watch
    if (closing_ || !keep_alive_) return linger();
    read_header();
  }

  // The client is gone: tell the pending exchange, drop the connection.
  // (The outbox is left alone: a write in flight still reads its front.)
  void lost() {
    dead_ = true;
    if (auto ex = std::move(exchange_)) ex->disconnected();
    close();
  }

  // Sends FIN, then reads and drops what still arrives (bounded in time), then closes.
  void linger() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(kLinger);
    drain_some();
  }
  void drain_some() {
    stream_.async_read_some(net::buffer(scratch_), [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->close();
      self->drain_some();
    });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  beast::tcp_stream stream_;
  net::steady_timer deadline_;
  HttpTransport::Impl& t_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<ExchangeImpl> exchange_;
  std::deque<std::string> outbox_;
  char scratch_[16384];
  bool first_ = true, keep_alive_ = true, http11_ = true, chunked_ = false;
  bool writing_ = false, ending_ = false, closing_ = false, dead_ = false, timed_out_ = false;
};

template <class F>
void ExchangeImpl::on_loop(F f) {
  // Only while this is the connection's current exchange (a late call of an ended one is dropped).
  net::post(ex_, [c = conn_, self = shared_from_this(), f = std::move(f)]() mutable {
    if (auto conn = c.lock(); conn && conn->current() == self.get()) f(*conn);
  });
}

void ExchangeImpl::reply(HttpResponse r) {
  on_loop([r = std::move(r)](Connection& c) { c.send_whole(r); });
}
void ExchangeImpl::start_stream(HttpResponse head) {
  on_loop([h = std::move(head)](Connection& c) { c.send_head(h); });
}
void ExchangeImpl::write(std::string piece) {
  on_loop([p = std::move(piece)](Connection& c) { c.send_piece(p); });
}
void ExchangeImpl::end_stream() {
  on_loop([](Connection& c) { c.send_end(); });
}

}  // namespace

void HttpTransport::Impl::accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket s) {
    if (ec == net::error::operation_aborted) return;
    if (ec) {  // out of file descriptors, most likely: try again shortly instead of spinning
      accept_retry.expires_after(std::chrono::milliseconds(50));
      accept_retry.async_wait([this](beast::error_code e) {
        if (!e) accept();
      });
      return;
    }
    if (open.load() >= limits.max_connections) refuse(s);
    else std::make_shared<Connection>(std::move(s), *this)->start();
    accept();
  });
}

// Past the connection cap: a 503 written straight into the fresh socket's empty send buffer, then closed.
void HttpTransport::Impl::refuse(tcp::socket& s) {
  static const std::string busy = error_text(503, "too many open connections; retry later");
  on_status(503);
  (void)::send(s.native_handle(), busy.data(), busy.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  beast::error_code ignored;
  s.shutdown(tcp::socket::shutdown_send, ignored);
  char drop[4096];
  while (::recv(s.native_handle(), drop, sizeof drop, MSG_DONTWAIT) > 0) {
  }
  s.close(ignored);
}

HttpTransport::HttpTransport(HttpLimits limits, Handler handler, StatusHook on_status) : impl_(std::make_unique<Impl>()) {
  impl_->limits = limits;
  impl_->handler = std::move(handler);
  impl_->on_status = std::move(on_status);
  impl_->workers.emplace(static_cast<size_t>(std::max(1, limits.workers)));
}

HttpTransport::~HttpTransport() { stop(); }

void HttpTransport::start(const std::string& host, int port) {
  // Every connection is a file descriptor: lift the soft limit so the cap, not the kernel, refuses.
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
  }
  const std::string where = host + ":" + (port ? std::to_string(port) : "(any port)");
  beast::error_code ec;
  const auto addr = net::ip::make_address(host, ec);
  if (ec) throw Error("cannot listen on " + where + " (not an IP address)");
  const tcp::endpoint ep(addr, static_cast<unsigned short>(port));
  auto& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  // SO_REUSEADDR only (a restart finds the port free at once); no SO_REUSEPORT, which would let a second
  // server bind a port in use.
  if (!ec) a.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(net::socket_base::max_listen_connections, ec);
  if (ec) throw Error("cannot listen on " + where + " (port in use, or not an address of this machine)");
  impl_->port = a.local_endpoint().port();
  impl_->accept();
  impl_->loop = std::thread([this] {
    // Ahead of the model's threads where the system allows it (root, CAP_SYS_NICE): /health and /metrics
    // must answer at once while every core computes forwards. Elsewhere this fails and changes nothing.
    setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), -5);
    impl_->ioc.run();
  });
}

void HttpTransport::stop() {
  if (!impl_ || !impl_->loop.joinable()) return;
  net::post(impl_->ioc, [this] {
    beast::error_code ignored;
    impl_->acceptor.close(ignored);
    impl_->accept_retry.cancel();
  });
  impl_->workers->join();
  // Connections still open (keep-alive idle, or lingering) end with the loop.
  impl_->ioc.stop();
  impl_->loop.join();
}

int HttpTransport::port() const { return impl_->port; }

void HttpTransport::offload(std::function<void()> fn) { net::post(*impl_->workers, std::move(fn)); }

int HttpTransport::open_connections() const { return impl_->open.load(); }

}  // namespace jf
