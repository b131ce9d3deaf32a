"""epochfs: declare training jobs' epoch orders to an epochfs mount.

Job is the client of one job's control directory (epochfs-control(7));
EpochfsSampler wraps a PyTorch sampler and declares each epoch's order.
torch is imported only when a RandomSampler needs a permutation.
"""

from epochfs.job import EpochfsError, Job, JOB_NAME_RE
from epochfs.sampler import EpochfsSampler, PidRegistrar

__all__ = ["EpochfsError", "EpochfsSampler", "Job", "JOB_NAME_RE", "PidRegistrar"]
__version__ = "0.1.0"
