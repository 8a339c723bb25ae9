// Large arrays of the layout search (src/core/search/search.cc) on transparent huge pages where Linux offers
// them: the block and bound-key arrays of a 530B search are ~4 MB each, first touched once, and on a
// virtual machine each 4 KiB page fault costs ~9 µs (docs/guide/speed.md). Internal header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace trainplan::detail {

/// std::allocator, except that an array of 2 MiB or more is mapped on its own and advised onto huge pages
/// (MADV_HUGEPAGE; a hint: where the kernel has none, it is ordinary memory).
template <class T>
struct huge_page_allocator {
  using value_type = T;
  huge_page_allocator() = default;
  template <class U>
  huge_page_allocator(const huge_page_allocator<U>&) noexcept {}

  static constexpr std::size_t kHuge = std::size_t{2} << 20;
  static std::size_t round_up(std::size_t bytes) { return (bytes + kHuge - 1) / kHuge * kHuge; }

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= kHuge) {
      // Huge pages cover only 2 MiB-aligned ranges: map 2 MiB more, keep the aligned part, unmap the rest.
      const std::size_t mapped = round_up(bytes);
      void* p = mmap(nullptr, mapped + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      char* raw = static_cast<char*>(p);
      char* aligned = raw + (kHuge - reinterpret_cast<std::uintptr_t>(raw) % kHuge) % kHuge;
      if (aligned > raw) munmap(raw, static_cast<std::size_t>(aligned - raw));
      const std::size_t tail = static_cast<std::size_t>(raw + mapped + kHuge - (aligned + mapped));
      if (tail > 0) munmap(aligned + mapped, tail);
      madvise(aligned, mapped, MADV_HUGEPAGE);
      return reinterpret_cast<T*>(aligned);
    }
#endif
    return static_cast<T*>(::operator new(bytes));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    const std::size_t bytes = n * sizeof(T);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= kHuge) {
      munmap(p, round_up(bytes));
      return;
    }
#endif
    ::operator delete(p);
  }
  template <class U>
  bool operator==(const huge_page_allocator<U>&) const noexcept { return true; }
  template <class U>
  bool operator!=(const huge_page_allocator<U>&) const noexcept { return false; }
};

}  // namespace trainplan::detail
