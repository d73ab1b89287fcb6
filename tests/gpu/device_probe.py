"""What one worker sees of the GPUs, as one JSON line on stdout (for scripts/gpu-check.sh):
its rank env, CUDA_VISIBLE_DEVICES, torch.cuda.device_count() and, per visible device, its
name, UUID and PCI bus id as the CUDA runtime reports them. Runs without a GPU too (count 0).
"""
import json
import os

import torch


def describe(index):
    props = torch.cuda.get_device_properties(index)
    bus = None
    if hasattr(props, "pci_bus_id"):
        bus = f"{getattr(props, 'pci_domain_id', 0):08X}:{props.pci_bus_id:02X}:{getattr(props, 'pci_device_id', 0):02X}.0"
    uuid = getattr(props, "uuid", None)
    return {"index": index, "name": props.name, "uuid": f"GPU-{uuid}" if uuid is not None else None, "pci_bus_id": bus}


count = torch.cuda.device_count() if torch.cuda.is_available() else 0
print(json.dumps({
    "rank": os.environ.get("RANK"),
    "local_rank": os.environ.get("LOCAL_RANK"),
    "local_world_size": os.environ.get("LOCAL_WORLD_SIZE"),
    "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    "device_count": count,
    "devices": [describe(i) for i in range(count)],
}), flush=True)
