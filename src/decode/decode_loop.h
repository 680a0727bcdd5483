// A strategy's decode loop as a C++20 coroutine: the loop reads as the algorithm does ("build the rows,
// `co_await` the forward, accept, commit"), but it does not run the forward itself. At each `co_await` it
// hands its input to whoever drives it and is resumed with the forward's results. A batch of one (`jf generate`,
// `jf bench`) forwards that input alone; the server's scheduler gathers the inputs of every active sequence
// into one multi-sequence forward (docs/ARCHITECTURE.md, "Decoders as coroutines").
#pragma once
#include <coroutine>
#include <exception>
#include <utility>

#include "model/batch.h"
#include "model/forward_pass.h"

namespace jf {

// Where a suspended loop leaves its request and finds its answer (DecodeContext holds one).
struct ForwardSlot {
  SequenceInput* input = nullptr;  // set while the loop waits for a forward
  ForwardResult result;            // this sequence's rows of it, set by the driver before resuming
};

// `co_await`ed by a loop: publishes the input, suspends, and returns the forward's results once resumed.
struct ForwardAwaiter {
  ForwardSlot& slot;
  SequenceInput& input;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<>) noexcept {
    slot.input = &input;
    slot.result = ForwardResult();
  }
  ForwardResult await_resume() noexcept {
    slot.input = nullptr;
    return slot.result;
  }
};

// The coroutine object of a decode loop. It starts suspended; each resume() runs the loop up to its next
// forward (or to its end). An exception thrown by the loop is rethrown from resume().
class DecodeLoop {
 public:
  struct promise_type {
    std::exception_ptr error;
    DecodeLoop get_return_object() { return DecodeLoop(std::coroutine_handle<promise_type>::from_promise(*this)); }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { error = std::current_exception(); }
  };

  DecodeLoop() = default;
  DecodeLoop(DecodeLoop&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  DecodeLoop& operator=(DecodeLoop&& o) noexcept {
    if (this != &o) {
      destroy();
      h_ = std::exchange(o.h_, {});
    }
    return *this;
  }
  DecodeLoop(const DecodeLoop&) = delete;
  DecodeLoop& operator=(const DecodeLoop&) = delete;
  // Destroying a suspended loop (a cancelled request) runs the destructors of its locals.
  ~DecodeLoop() { destroy(); }

  bool finished() const { return !h_ || h_.done(); }
  void resume() {
    h_.resume();
    if (h_.done() && h_.promise().error) std::rethrow_exception(std::exchange(h_.promise().error, nullptr));
  }

 private:
  explicit DecodeLoop(std::coroutine_handle<promise_type> h) : h_(h) {}
  void destroy() {
    if (h_) h_.destroy();
    h_ = {};
  }
  std::coroutine_handle<promise_type> h_;
};

}  // namespace jf
