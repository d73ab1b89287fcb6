"""A --torchrun wrapper for torchrun_cases.py: torch.distributed.run's main as installed, no fixes."""
import sys

from torch.distributed.run import main

if __name__ == "__main__":
    sys.exit(main())
