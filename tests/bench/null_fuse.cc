// null_fuse: a FUSE filesystem that stores nothing, the ceiling of any FUSE
// data path on this machine. Writes are accepted and dropped (only the size
// is kept), reads answer bytes from one static buffer. It negotiates what the
// spill area's mount negotiates (1 MiB max_write, so max_pages follows, async
// direct I/O as libfuse's default) and runs the same multi-threaded loop, so
// fio through it measures what the kernel's FUSE transport alone costs: the
// copies through /dev/fuse and the context switches, with no store behind.
// spill_mount_bench.sh prints it beside the spill area. Not a test.
//
//   null_fuse MOUNTPOINT [THREADS]      (foreground; fusermount3 -u to stop)
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace null_fuse {

struct File {
  fuse_ino_t ino;
  off_t size;
};

std::mutex mu;
std::map<std::string, File> by_name;
std::map<fuse_ino_t, std::string> by_ino;
fuse_ino_t next_ino = 2;
std::vector<char> pattern(1 << 20, 'x');

struct stat AttrOf(fuse_ino_t ino, off_t size, bool dir) {
  struct stat st {};
  st.st_ino = ino;
  st.st_mode = dir ? (S_IFDIR | 0755) : (S_IFREG | 0644);
  st.st_nlink = dir ? 2 : 1;
  st.st_size = size;
  st.st_blksize = 1 << 20;
  return st;
}

bool Find(fuse_ino_t ino, File* f) {
  auto n = by_ino.find(ino);
  if (n == by_ino.end()) return false;
  *f = by_name.at(n->second);
  return true;
}

void ReplyEntry(fuse_req_t req, const File& f) {
  fuse_entry_param e {};
  e.ino = f.ino;
  e.attr = AttrOf(f.ino, f.size, false);
  fuse_reply_entry(req, &e);
}

void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  std::lock_guard<std::mutex> g(mu);
  auto it = by_name.find(name);
  if (parent != FUSE_ROOT_ID || it == by_name.end()) return (void)fuse_reply_err(req, ENOENT);
  ReplyEntry(req, it->second);
}

void GetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  std::lock_guard<std::mutex> g(mu);
  if (ino == FUSE_ROOT_ID) {
    struct stat st = AttrOf(ino, 0, true);
    return (void)fuse_reply_attr(req, &st, 0);
  }
  File f;
  if (!Find(ino, &f)) return (void)fuse_reply_err(req, ENOENT);
  struct stat st = AttrOf(ino, f.size, false);
  fuse_reply_attr(req, &st, 0);
}

void SetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info*) {
  std::lock_guard<std::mutex> g(mu);
  auto n = by_ino.find(ino);
  if (n == by_ino.end()) return (void)fuse_reply_err(req, ENOENT);
  File& f = by_name.at(n->second);
  if (to_set & FUSE_SET_ATTR_SIZE) f.size = attr->st_size;
  struct stat st = AttrOf(ino, f.size, false);
  fuse_reply_attr(req, &st, 0);
}

void Create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t, fuse_file_info* fi) {
  std::lock_guard<std::mutex> g(mu);
  if (parent != FUSE_ROOT_ID) return (void)fuse_reply_err(req, EACCES);
  auto it = by_name.find(name);
  if (it == by_name.end()) {
    it = by_name.emplace(name, File{next_ino++, 0}).first;
    by_ino[it->second.ino] = name;
  }
  if (fi->flags & O_TRUNC) it->second.size = 0;
  fuse_entry_param e {};
  e.ino = it->second.ino;
  e.attr = AttrOf(e.ino, it->second.size, false);
  fuse_reply_create(req, &e, fi);
}

void Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  std::lock_guard<std::mutex> g(mu);
  File f;
  if (!Find(ino, &f)) return (void)fuse_reply_err(req, ENOENT);
  fuse_reply_open(req, fi);
}

void Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  off_t end;
  {
    std::lock_guard<std::mutex> g(mu);
    File f;
    if (!Find(ino, &f)) return (void)fuse_reply_err(req, ENOENT);
    end = f.size;
  }
  if (off >= end) return (void)fuse_reply_buf(req, nullptr, 0);
  const size_t n = std::min(std::min(size, static_cast<size_t>(end - off)), pattern.size());
  fuse_reply_buf(req, pattern.data(), n);
}

void Write(fuse_req_t req, fuse_ino_t ino, const char*, size_t size, off_t off, fuse_file_info*) {
  std::lock_guard<std::mutex> g(mu);
  auto n = by_ino.find(ino);
  if (n == by_ino.end()) return (void)fuse_reply_err(req, ENOENT);
  File& f = by_name.at(n->second);
  f.size = std::max<off_t>(f.size, off + static_cast<off_t>(size));
  fuse_reply_write(req, size);
}

void Unlink(fuse_req_t req, fuse_ino_t, const char* name) {
  std::lock_guard<std::mutex> g(mu);
  auto it = by_name.find(name);
  if (it == by_name.end()) return (void)fuse_reply_err(req, ENOENT);
  by_ino.erase(it->second.ino);
  by_name.erase(it);
  fuse_reply_err(req, 0);
}

void Ok(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, 0); }
void Fsync(fuse_req_t req, fuse_ino_t, int, fuse_file_info*) { fuse_reply_err(req, 0); }

void Init(void*, fuse_conn_info* conn) {
  conn->max_write = 1u << 20;
  conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
}

}  // namespace null_fuse

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: null_fuse MOUNTPOINT [THREADS]\n");
    return 2;
  }
  const unsigned threads = argc > 2 ? static_cast<unsigned>(std::atoi(argv[2])) : 4;
  fuse_lowlevel_ops ops {};
  ops.init = null_fuse::Init;
  ops.lookup = null_fuse::Lookup;
  ops.getattr = null_fuse::GetAttr;
  ops.setattr = null_fuse::SetAttr;
  ops.create = null_fuse::Create;
  ops.open = null_fuse::Open;
  ops.read = null_fuse::Read;
  ops.write = null_fuse::Write;
  ops.unlink = null_fuse::Unlink;
  ops.flush = null_fuse::Ok;
  ops.release = null_fuse::Ok;
  ops.fsync = null_fuse::Fsync;
  char* fargv[] = {argv[0], const_cast<char*>("-o"),
                   const_cast<char*>("fsname=null_fuse,default_permissions")};
  fuse_args args = FUSE_ARGS_INIT(3, fargv);
  fuse_session* se = fuse_session_new(&args, &ops, sizeof(ops), nullptr);
  if (se == nullptr || fuse_session_mount(se, argv[1]) != 0) return 1;
  fuse_loop_config* cfg = fuse_loop_cfg_create();
  fuse_loop_cfg_set_max_threads(cfg, threads);
  fuse_loop_cfg_set_idle_threads(cfg, threads);
  const int rc = fuse_session_loop_mt(se, cfg);
  fuse_loop_cfg_destroy(cfg);
  fuse_session_unmount(se);
  fuse_session_destroy(se);
  return rc == 0 ? 0 : 1;
}
