"""A legacy torch.distributed.launch-style script: takes its local rank from argv.

Accepts both spellings the launchers have used (`--local_rank=N` before torch 2.0,
`--local-rank=N` since), checks the value matches LOCAL_RANK in the environment, and
prints `local_rank=N argv_ok` per worker. Exits 2 when the argument is missing or wrong.
"""
import argparse
import os
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", "--local-rank", dest="local_rank", type=int, default=None)
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    env_rank = os.environ.get("LOCAL_RANK")
    if args.local_rank is None:
        print("legacy_local_rank: no --local_rank/--local-rank argument; launch with --use-env=false "
              "(or torch.distributed.launch)", file=sys.stderr)
        return 2
    if env_rank is not None and int(env_rank) != args.local_rank:
        print(f"legacy_local_rank: argv local rank {args.local_rank} != LOCAL_RANK {env_rank}", file=sys.stderr)
        return 2
    print(f"local_rank={args.local_rank} argv_ok tag={args.tag} argv={sys.argv[1:]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
