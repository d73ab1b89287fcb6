#!/usr/bin/env bash
# The wheel, proven from nothing (docs/install.md): builds it from this tree (pip wheel with
# scikit-build-core, no build isolation: install-deps put the builders in the torch venv; the
# binary is this build's, the one the suite tests),
# repairs it with auditwheel for the manylinux tag this machine's binary allows, then, in a
# fresh `python3 -m venv` run from an empty folder with no access to the source tree: installs
# it (no index), gives the venv PyPI's torch (the suite's copy, install-deps', through a .pth:
# not 5 GB copied per run), and runs (a) ddp-launch --nproc-per-node 2 on a gloo script whose
# rank 1 is SIGKILLed and resumes from its ddp_snapshot, (b) python -m ddp_launch --version and
# the binary's, equal to VERSION, (c) pip uninstall, after which the venv holds exactly what it
# held before. Also: ldd of the installed binary names only the policy's libraries, the wheel is
# at most 5 MB. Prints the wheel's size, tag and install time. Exit 77 (skipped) without the
# torch venv or its builders.
set -euo pipefail
# shellcheck source=SCRIPTDIR/../../scripts/lib.sh
source "$(dirname "$0")/../../scripts/lib.sh"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[[ -x $torch_python ]] || skip "no torch venv at $torch_venv (scripts/install-deps.sh)"
"$torch_python" -c 'import scikit_build_core, auditwheel' 2>/dev/null ||
  skip "the torch venv has no scikit-build-core or auditwheel (scripts/install-deps.sh installs them)"
version=$(head -1 "$repo_root/VERSION")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. The wheel, by pip and scikit-build-core from pyproject.toml, of the ddp-launch this build
# made and the suite tests (DDP_PREBUILT_LAUNCHER: stripped and installed, not compiled again;
# docs/install.md times a wheel compiled from scratch).
[[ -x $build_dir/launcher/ddp-launch ]] || fail "no $build_dir/launcher/ddp-launch: build the project first"
"$torch_python" -m pip wheel -q --no-build-isolation --no-deps -w "$tmp/dist" \
  --config-settings=build-dir="$tmp/wheel-build" \
  --config-settings=cmake.define.DDP_PREBUILT_LAUNCHER="$build_dir/launcher/ddp-launch" "$repo_root" \
  >"$tmp/build.log" 2>&1 ||
  fail "pip wheel failed: $(tail -30 "$tmp/build.log")"
built=("$tmp"/dist/ddp_launch-"$version"-*.whl)
[[ -f ${built[0]} ]] || fail "no wheel named ddp_launch-$version-*.whl in $tmp/dist: $(ls "$tmp/dist")"

# 2. Repaired for the manylinux tag auditwheel finds the binary consistent with.
plat=$("$torch_python" -m auditwheel show "${built[0]}" 2>&1 | tr -d '\n' | grep -o 'manylinux_[0-9]*_[0-9]*_x86_64' | head -1) ||
  true
[[ -n $plat ]] || fail "auditwheel finds no manylinux tag: $("$torch_python" -m auditwheel show "${built[0]}" 2>&1)"
PATH="$(dirname "$torch_python"):$PATH" "$torch_python" -m auditwheel repair --plat "$plat" -w "$tmp/wheelhouse" "${built[0]}" >"$tmp/repair.log" 2>&1 ||
  fail "auditwheel repair failed: $(cat "$tmp/repair.log")"
wheel=("$tmp"/wheelhouse/ddp_launch-"$version"-*"$plat"*.whl)
[[ -f ${wheel[0]} ]] || fail "no repaired wheel for $plat: $(ls "$tmp/wheelhouse")"
bytes=$(stat -c %s "${wheel[0]}")
((bytes <= 5 * 1024 * 1024)) || fail "the wheel is $bytes bytes, over 5 MB"

# 3. A fresh venv, used from an empty folder: nothing of the source tree on any path.
/usr/bin/python3 -m venv "$tmp/venv"
find "$tmp/venv" | sort >"$tmp/before.txt"
start=$(date +%s%N)
"$tmp/venv/bin/pip" install -q --no-index --disable-pip-version-check "${wheel[0]}" ||
  fail "pip install of the wheel failed"
install_ms=$((($(date +%s%N) - start) / 1000000))
site=$("$tmp/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
"$torch_python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))' >"$site/zz_suite_torch.pth"
mkdir "$tmp/run"
cp "$here/wheel_job.py" "$tmp/run/"
clean_env=(env -i "PATH=$tmp/venv/bin:/usr/bin:/bin" "HOME=$tmp" "TMPDIR=$tmp" "LANG=C.UTF-8")
binary=$(cd "$tmp/run" && "${clean_env[@]}" sh -c 'command -v ddp-launch')
[[ $binary == "$tmp/venv/bin/ddp-launch" ]] || fail "ddp-launch on PATH is '$binary', not the venv's"
libs=$(ldd "$binary" | awk '{print $1}' | grep -vE '^(linux-vdso\.so\.1|libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|/lib64/ld-linux-x86-64\.so\.2)$' || true)
[[ -z $libs ]] || fail "the installed binary needs libraries outside the manylinux policy: $libs"

# (a) a job that loses a worker and resumes from its snapshot.
out=$(cd "$tmp/run" && "${clean_env[@]}" ddp-launch --nproc-per-node 2 --max-restarts 1 python wheel_job.py 2>&1) ||
  fail "the job failed: $out"
resumed=$(grep -c 'attempt 1: resumed from step 3' <<<"$out" || true)
[[ $resumed == 2 ]] || fail "both ranks should resume from step 3 (the snapshot before the kill at step 4): $out"
grep -q 'done at step 8' <<<"$out" || fail "the job did not finish: $out"

# (b) one version, from VERSION, both ways.
as_module=$(cd "$tmp/run" && "${clean_env[@]}" python -m ddp_launch --version)
as_binary=$(cd "$tmp/run" && "${clean_env[@]}" ddp-launch --version)
[[ $as_module == "ddp-launch $version" && $as_binary == "$as_module" ]] ||
  fail "versions: python -m ddp_launch '$as_module', ddp-launch '$as_binary', VERSION $version"

# (c) uninstalled: the venv as it was.
rm "$site/zz_suite_torch.pth"
"$tmp/venv/bin/pip" uninstall -q -y ddp-launch
find "$tmp/venv" | sort >"$tmp/after.txt"
left=$(comm -13 "$tmp/before.txt" "$tmp/after.txt")
[[ -z $left ]] || fail "pip uninstall left behind: $left"
echo "ok: $(basename "${wheel[0]}"), $((bytes / 1024)) KiB, installed in $install_ms ms; a killed worker resumed from" \
  "its snapshot; version $version; uninstalled without a trace"
