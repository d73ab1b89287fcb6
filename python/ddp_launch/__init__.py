"""ddp-launch as a Python package: the `ddp-launch` binary the wheel installs beside this
interpreter's scripts, found for `python -m ddp_launch` (as `python -m torch.distributed.run`
is for torchrun). The helpers workers import (ddp_snapshot, ddp_progress, ddp_standby,
ddp_tensor_table, ddp_exit_drain) are installed as top-level modules beside this package.
"""
import os
import shutil
import sys
import sysconfig

try:
    from importlib.metadata import version as _version
    __version__ = _version("ddp-launch")
except Exception:  # run from a source tree: no installed metadata
    __version__ = "unknown"

NAME = "ddp-launch"


def binary():
    """The installed ddp-launch: in this interpreter's scripts folder (a venv's bin/, or the user
    scheme's with pip --user), else on PATH. Raises FileNotFoundError naming where it looked."""
    looked = []
    schemes = [None]
    if hasattr(sysconfig, "get_preferred_scheme"):
        schemes.append(sysconfig.get_preferred_scheme("user"))
    for scheme in schemes:
        try:
            folder = sysconfig.get_path("scripts", scheme) if scheme else sysconfig.get_path("scripts")
        except KeyError:
            continue
        path = os.path.join(folder, NAME)
        looked.append(path)
        if os.access(path, os.X_OK):
            return path
    found = shutil.which(NAME)
    if found:
        return found
    raise FileNotFoundError(f"{NAME} is not installed beside {sys.executable} (looked at {', '.join(looked)} and "
                            f"PATH); reinstall the package: pip install --force-reinstall ddp-launch")
