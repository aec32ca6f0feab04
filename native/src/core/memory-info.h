// What the machine has: the physical memory, for decisions that trade memory the OS can reclaim (a
// mapped file's pages) for memory it cannot (copies).
#pragma once
#include <cstdint>

namespace folio {

// Bytes of physical memory; 0 where the OS does not say.
uint64_t physical_memory_bytes();

}  // namespace folio
