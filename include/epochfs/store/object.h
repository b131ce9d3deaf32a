// Object: the immutable bytes of one whole dataset file, or of one block of
// a file too large to cache whole, as held in RAM.
//
// Objects are shared, read-only, and reference-counted: a reader keeps its
// ObjectRef for the life of its open file, so eviction never frees bytes that
// a reply is still being built from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "epochfs/cache/policy.h"
#include "epochfs/store/version.h"

namespace epochfs::store {

struct Object {
  Object() = default;
  Object(const Object&) = default;
  Object(Object&&) = default;
  Object& operator=(const Object&) = default;
  Object& operator=(Object&&) = default;
  // Its bytes' storage may serve a later load (byte_pool.h).
  ~Object();

  cache::ObjectId id = 0;
  Version version;  // what the bytes are a copy of (version.h)
  uint64_t checksum = 0;  // ObjectChecksum of data (of the bytes handed over)
  std::vector<char> data;
  // Handed over (fuse.one_copy, CacheFront::HandOver): the kernel's page
  // cache holds the object's bytes in the daemon's place; `data` is empty
  // and `handed_size` bytes stay charged to the budget.
  bool handed_over = false;
  uint64_t handed_size = 0;
  // Handed over, of more than one block (HandOver's `block`): the XXH3-64 of
  // each `sum_block` bytes of the bytes handed over (the last sum of what is
  // left), so that a refill reads back only the blocks the kernel lost and
  // checks each (CacheFront::RefillBlock). 8 bytes a block: 16 KiB for 8 GiB
  // handed over in blocks of 4 MiB. Empty otherwise.
  uint64_t sum_block = 0;
  std::vector<uint64_t> block_sums;
  // The bytes the object is charged for in the RAM store.
  uint64_t charged() const { return handed_over ? handed_size : data.size(); }
};

using ObjectRef = std::shared_ptr<const Object>;

// The id of the object behind a lower file: a hash (seeded at random once
// per process) of its path relative to LOWER's root, as the mount names it (a normalised path: no ".", "..", empty
// or trailing components). A job's samples list names objects without a stat
// of each file (the file is checked at its first load); the id survives FUSE
// forgetting the inode. Two hard links to one file are two objects.
cache::ObjectId ObjectIdOf(std::string_view rel);
// The id of the block [offset, offset + length) of the lower file at `rel`: a
// file too large to cache whole is cached in blocks, each an object of its own
// to the policy and the RAM store. The range is in the key, so blocks of two
// sizes (the block size follows the budget) never share an id. Seeded as
// ObjectIdOf, and never the id of a file's whole object (the key holds a NUL).
cache::ObjectId BlockIdOf(std::string_view rel, uint64_t offset, uint64_t length);
// The XXH3-64 of each `block` bytes of data[0, size) (the last of what is
// left), as a handed-over stub keeps them for refills in blocks
// (Object::block_sums): none when size <= block (the whole checksum says it
// all) or block is 0.
std::vector<uint64_t> RefillSums(const char* data, uint64_t size, uint64_t block);

// An object's checksum (Object::checksum; compared only with another
// object's, never stored): the XXH3-64 of the BlockSums of its bytes in
// kChecksumBlockBytes blocks. A reader that has verified every block against
// its sum (the disk tier) has the checksum from those sums, without hashing
// the bytes a second time: ObjectChecksumOfSums(BlockSums(d, n,
// kChecksumBlockBytes)) == ObjectChecksum(d, n).
inline constexpr size_t kChecksumBlockBytes = 64 * 1024;
uint64_t ObjectChecksum(const char* data, size_t len);
uint64_t ObjectChecksumOfSums(const uint8_t* sums, size_t sums_len);

}  // namespace epochfs::store
