// Data-parallel training across processes (OpenMPI, when jf is built with it and launched by mpirun).
// The gradient of a step is the sum of its micro-batch gradients taken in micro-batch order on rank 0 and
// broadcast, so N processes with A micro-batches each compute bit for bit what one process computes with
// N x A micro-batches: the weights are identical, not just close.
#pragma once
#include <cstdint>
#include <vector>

namespace jf {

class Distributed {
 public:
  // The process group (initialised on first use; a process not started by mpirun is a group of one).
  static Distributed& get();
  int rank() const { return rank_; }
  int size() const { return size_; }
  bool enabled() const { return size_ > 1; }
  // Micro-batch j of a step belongs to rank j % size.
  int owner(int64_t micro) const { return static_cast<int>(micro % size_); }

  // out = g_0 + g_1 + ... + g_{n-1} summed left to right, where this rank holds g_j for its own j in `mine`
  // (in increasing j). The result lands on every rank.
  void ordered_sum(const std::vector<const float*>& mine, int64_t n_micro, int64_t len, float* out);
  double sum(double x);  // for logging
  void barrier();
  ~Distributed();

 private:
  Distributed();
  int rank_ = 0, size_ = 1;
  bool mpi_ = false;
  std::vector<float> recv_;
};

}  // namespace jf
