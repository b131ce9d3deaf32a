// SizeForRead: sizes an empty byte vector to n bytes that a read is about to
// overwrite, with its pages made present in one call (madvise
// MADV_POPULATE_WRITE) before the zero-fill of resize, not one page fault
// per 4 KiB page. Objects above the daemon's mmap threshold get fresh pages
// each (daemon/memory_governor.cc: freed memory goes back to the kernel), and
// on a virtual machine a fault is dear: 512 KiB sized by resize alone took
// 360 us, populated first 174 us (docs/benchmarks.md, "The disk tier").
// Where the kernel lacks the advice (before Linux 5.14) the pages fault in
// as before. The bytes read are the same either way: all zero.
//
// CopyFresh: the same for bytes that are already in memory (a buffer an
// O_DIRECT read filled): the pages made present in one call, then the bytes
// copied in, without the zero-fill resize would make first.
//
// No state; thread-safe.
#pragma once

#include <cstddef>
#include <vector>

namespace epochfs {

// REQUIRES: v is empty.
void SizeForRead(std::vector<char>* v, size_t n);
// REQUIRES: v is empty. v holds the n bytes at src afterwards.
void CopyFresh(std::vector<char>* v, const char* src, size_t n);

}  // namespace epochfs
