"""A torchrun-style script whose entry point is wrapped in PyTorch's @record and raises.

Rank FAIL_RANK (default 1) raises ValueError from a nested function; @record writes the
Python traceback to $TORCHELASTIC_ERROR_FILE, so the launcher's failure report must show
it. The other ranks exit cleanly. Exit code: 1 on the failing rank (uncaught exception).
"""
import os

from torch.distributed.elastic.multiprocessing.errors import record


def load_shard(rank):
    raise ValueError(f"corrupt shard for rank {rank}: checksum mismatch (intentional test failure)")


@record
def main():
    rank = int(os.environ["RANK"])
    fail_rank = int(os.environ.get("FAIL_RANK", "1"))
    print(f"rank {rank}: starting, error file {os.environ.get('TORCHELASTIC_ERROR_FILE', '<unset>')}", flush=True)
    if rank == fail_rank:
        load_shard(rank)
    print(f"rank {rank}: done", flush=True)


if __name__ == "__main__":
    main()
