// Byte buffers for objects' bytes: a few freed ones are kept for the next
// loads.
//
// The daemon makes freed memory leave the process (docs/governor.md: glibc's
// mmap threshold fixed at 32 KiB with fuse.one_copy, 128 KiB under the memory
// governor, and glibc trims its arenas' free tops): so each load's buffer was
// new pages, a page fault each as it was first written, and its free
// unmapped or trimmed them again (a TLB flush on every core the daemon runs
// on): in a cold epoch of 100 KiB files, more of the daemon's CPU than its
// own code. So the storage of a freed object's bytes of 32 KiB to 1 MiB is
// kept, up to kKeptBytes in all, and the next load of about its size (a
// capacity within an eighth above) takes it; past that bound a freed buffer
// is freed as before. A new buffer's pages are populated with one madvise.
//
// Memory: at most kKeptBytes kept, not charged to the cache's budget; a
// buffer taken may have up to an eighth more capacity than its bytes.
// Thread safety: thread-safe (one mutex).
#pragma once

#include <cstddef>
#include <vector>

namespace epochfs::store {

// The most bytes of freed buffers kept at once.
inline constexpr size_t kKeptBytes = 4u << 20;

// A buffer of `n` zero bytes (size n), a kept one when one fits.
std::vector<char> TakeBuffer(size_t n);
// A buffer of size `n` whose bytes are unspecified: a kept one's are those of
// the object it held last (of any file, any user). For a load that reads
// into it: its caller writes every byte it keeps (it truncates the buffer to
// what was read) and drops the buffer, never handing it on, when it cannot.
// This spares writing zeroes over bytes the read overwrites at once (a
// memset of the whole file per load).
std::vector<char> TakeBufferToFill(size_t n);
// `bytes` is no longer needed: its storage is kept for TakeBuffer if it
// fits the rules above, freed otherwise. `bytes` is left empty.
void GiveBuffer(std::vector<char>&& bytes);
// Frees every buffer kept (the memory governor, when the budget shrinks).
void FreeKeptBuffers();
// The bytes kept now (tests).
size_t KeptBufferBytes();

}  // namespace epochfs::store
