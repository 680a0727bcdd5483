// std::vector storage aligned to a cache line. Attention reads keys and scores as 64-byte vectors; from
// malloc's 16-byte alignment every AVX-512 load of them straddles two cache lines, which measured 1.5x
// slower key scores on a Zen 5 core.
#pragma once
#include <cstddef>
#include <new>
#include <vector>

namespace jf {

template <class T>
struct CacheAlignedAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  CacheAlignedAllocator() = default;
  template <class U>
  CacheAlignedAllocator(const CacheAlignedAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, size_t) { ::operator delete(p, kAlign); }
  template <class U>
  bool operator==(const CacheAlignedAllocator<U>&) const { return true; }
};

template <class T>
using aligned_vector = std::vector<T, CacheAlignedAllocator<T>>;

}  // namespace jf
