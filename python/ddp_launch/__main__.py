"""python -m ddp_launch ARGS: runs the installed ddp-launch with ARGS, in this process's place."""
import os
import sys

from ddp_launch import binary


def main():
    path = binary()
    os.execv(path, [path, *sys.argv[1:]])


if __name__ == "__main__":
    main()
