#include "train/distributed.h"

#include <algorithm>
#include <cstdlib>

#include "base/error.h"

#ifdef JF_WITH_MPI
// The C API only; keep OpenMPI's and MPICH's mpi.h from declaring the C++ bindings.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace jf {

Distributed& Distributed::get() {
  static Distributed d;
  return d;
}

Distributed::Distributed() {
#ifdef JF_WITH_MPI
  // Only join MPI when launched by mpirun; a plain `jf train` stays a single process.
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE")) {
    MPI_Init(nullptr, nullptr);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    mpi_ = true;
  }
#endif
}

Distributed::~Distributed() {
#ifdef JF_WITH_MPI
  if (mpi_) MPI_Finalize();
#endif
}

void Distributed::ordered_sum(const std::vector<const float*>& mine, int64_t n_micro, int64_t len, float* out) {
  auto add = [&](int64_t j, const float* g) {
    if (j == 0) std::copy(g, g + len, out);
    else
      for (int64_t i = 0; i < len; i++) out[i] += g[i];
  };
  if (!mpi_) {
    for (int64_t j = 0; j < n_micro; j++) add(j, mine[static_cast<size_t>(j)]);
    return;
  }
#ifdef JF_WITH_MPI
  JF_CHECK(len <= INT32_MAX, "gradient too large for one MPI message");
  if (rank_ == 0) {
    recv_.resize(static_cast<size_t>(len));
    for (int64_t j = 0; j < n_micro; j++) {
      if (owner(j) == 0) {
        add(j, mine[static_cast<size_t>(j / size_)]);
      } else {
        MPI_Recv(recv_.data(), static_cast<int>(len), MPI_FLOAT, owner(j), static_cast<int>(j % 30000), MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        add(j, recv_.data());
      }
    }
  } else {
    for (int64_t j = rank_; j < n_micro; j += size_)
      MPI_Send(mine[static_cast<size_t>(j / size_)], static_cast<int>(len), MPI_FLOAT, 0, static_cast<int>(j % 30000),
               MPI_COMM_WORLD);
  }
  MPI_Bcast(out, static_cast<int>(len), MPI_FLOAT, 0, MPI_COMM_WORLD);
#endif
}

double Distributed::sum(double x) {
#ifdef JF_WITH_MPI
  if (mpi_) {
    double out = 0;
    MPI_Allreduce(&x, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return out;
  }
#endif
  return x;
}

void Distributed::barrier() {
#ifdef JF_WITH_MPI
  if (mpi_) MPI_Barrier(MPI_COMM_WORLD);
#endif
}

}  // namespace jf
