"""ddp_progress.wrap_torch_distributed on the collectives torch 2.x scripts call: each one
records its op in the progress record (contract/progress_record.hpp) as the launcher names it.
One process, a gloo group of 1 on a FileStore; a temporary file stands in for the launcher's
record. Prints one line per collective; exits 1 on a wrong op, 77 on torch 1.x."""
import os
import struct
import sys
import tempfile

import torch
import torch.distributed as dist

if int(torch.__version__.split(".")[0]) < 2:
    print("SKIP: the tensor forms are torch 2.x's")
    sys.exit(77)
work = tempfile.mkdtemp()
os.environ["DDP_LAUNCH_PROGRESS_FILE"] = os.path.join(work, "progress")
open(os.environ["DDP_LAUNCH_PROGRESS_FILE"], "wb").close()
sys.path.insert(0, os.environ["DDP_TEST_PYTHON_DIR"])
import ddp_progress  # noqa: E402

ddp_progress.wrap_torch_distributed()
dist.init_process_group("gloo", store=dist.FileStore(os.path.join(work, "store"), 1), rank=0, world_size=1)
names = {number: name for name, number in ddp_progress.OPS.items()}
t = torch.ones(4)
calls = [
    ("all_gather_into_tensor", "all_gather", lambda: dist.all_gather_into_tensor(torch.empty(4), t)),
    ("reduce_scatter_tensor", "reduce_scatter", lambda: dist.reduce_scatter_tensor(torch.empty(4), t)),
    ("all_to_all_single", "all_to_all", lambda: dist.all_to_all_single(torch.empty(4), t)),
    ("all_gather_object", "all_gather", lambda: dist.all_gather_object([None], {"a": 1})),
    ("broadcast_object_list", "broadcast", lambda: dist.broadcast_object_list([1], src=0)),
]
bad = 0
for name, expected, call in calls:
    call()
    with open(os.environ["DDP_LAUNCH_PROGRESS_FILE"], "rb") as f:
        record = f.read()
    op = names.get(struct.unpack_from("<I", record, 48)[0], "?")
    entered, completed = struct.unpack_from("<QQ", record, 24)
    fine = op == expected and entered == completed
    bad += not fine
    print(f"{name}: recorded op {op}, entered {entered}, completed {completed} {'ok' if fine else 'WRONG: ' + expected}")
dist.destroy_process_group()
sys.exit(1 if bad else 0)
