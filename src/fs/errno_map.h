// The one place where Status becomes errno (the FUSE edge).
#pragma once

#include "epochfs/common/status.h"

namespace epochfs::fs {

int ToErrno(const Status& s);

}  // namespace epochfs::fs
