"""A worker for check_launch.py under ddp-launch: with TORCHELASTIC_USE_AGENT_STORE=True, before
importing torch it opens ONE plain TCP connection to MASTER_ADDR:MASTER_PORT and exits 3 if
that is refused (the launcher's store must be up before any worker starts); then prints TORCHELASTIC_USE_AGENT_STORE, joins the process group
through env:// (gloo, or STORE_WORKER_BACKEND=nccl on cuda:LOCAL_RANK), all-reduces rank+1 once, checks the sum and returns at once (the
elastic agent's "distributed sum" test). Prints one line per check.
"""
import faulthandler
import os
import signal
import socket
import sys

faulthandler.register(signal.SIGUSR1, all_threads=True)  # a hung run's check asks for our stacks (hung_jobs.py)

addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":  # rank 0 hosts it otherwise: it may come later
    try:
        socket.create_connection((addr, port), timeout=30).close()
    except OSError as e:
        print(f"rank {rank}: store at {addr}:{port} not reachable on the first try: {e}", flush=True)
        sys.exit(3)
    print(f"rank {rank}: first connection to {addr}:{port} ok", flush=True)
print(f"rank {rank}: TORCHELASTIC_USE_AGENT_STORE={os.environ.get('TORCHELASTIC_USE_AGENT_STORE')}", flush=True)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

backend = os.environ.get("STORE_WORKER_BACKEND", "gloo")
dist.init_process_group(backend)
t = torch.tensor([float(rank + 1)])
if backend == "nccl":
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    t = t.cuda()
dist.all_reduce(t)
expected = world * (world + 1) / 2
print(f"rank {rank}/{world}: sum={t.item():g} expected={expected:g} {'ok' if t.item() == expected else 'WRONG'}",
      flush=True)
sys.exit(0 if t.item() == expected else 1)
