"""Prepare the GPU machine's run from this one: the wheels it lacks, PufferLib's sdist, and the
one command line that installs them there without a package index and runs gpu_check
(tools/gpu_run.sh).

    python tools/gpu_prepare.py                 # into .gpu_wheels/ (git-ignored locally)
    python tools/gpu_prepare.py --check-only    # only check the folder: complete, in budget

The target (docs/gpu.md): Python 3.12 with torch (CUDA), nvcc, numpy, Pillow, OpenCV and the
image's other packages, no package index, and a working tree of at most 64 MiB that travels
with the command. So the folder holds, as py3.12 manylinux wheels:
- the project's dependencies (pyproject's, less torch), the test tools, ale-py and mujoco for
  gym:ALE/Pong-v5 and HalfCheetah-v5, and the build requirements (setuptools, wheel, Cython)
  that `pip install --no-build-isolation` uses to build this tree's C extensions THERE;
- PufferLib 3.0's sdist, with its rendering resources (72 MB of sprites) left out, and the
  packages its trainer imports: gym 0.23 (an sdist only on PyPI: a wheel is built here, pure
  Python), heavyball < 2 (ForeachMuon, its default optimizer), pyro-ppl, rich-argparse.
Left out, because the target has them and they are large: TARGET_HAS. The check resolves the
whole set with pip (`--dry-run --no-index`) against the folder plus those, for Python 3.12.

Tested in: tests/benchmarks/test_gpu_check.py (the wheel set, the peer build)
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ".gpu_wheels"
LIMIT_MIB = 64.0
PLATFORM = ["--python-version", "3.12", "--implementation", "cp", "--only-binary=:all:",
            *[a for n in ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64",
                          "manylinux_2_17_x86_64", "manylinux2014_x86_64",
                          "manylinux1_x86_64") for a in ("--platform", n)]]
# On the target's image already (device docs, 2026-11), and large: not shipped. pygame-ce
# (Gymnasium's classic-control extra) only draws frames, which the check does not ask for.
# setuptools: the image's torch 2.11 pins it below 82 and the image has 81.0.0, which the
# build's setuptools>=77 accepts; shipping the newest (84) stopped the install there (2026-11-27).
TARGET_HAS = {"numpy", "pillow", "opencv-python-headless", "torch", "triton", "pygame-ce",
              "pygame", "sympy", "networkx", "jinja2", "fsspec", "filelock", "opt-einsum",
              "setuptools"}
EXTRA = ["pytest", "pytest-asyncio", "hypothesis", "ale-py", "mujoco", "wheel", "cython>=3.0",
         "stable-baselines3"]  # the last: bench learn's peer (gpu_run.sh phase P)
# PufferLib's trainer's imports, downloaded without their dependencies (two need torch, which
# pip would fetch whole): theirs are named here or on the target.
PEER = ["heavyball<2", "pyro-ppl", "pyro-api", "rich-argparse", "gym-notices", "tqdm",
        "opt-einsum"]
PEER_SDIST = "pufferlib==3.0.*"


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements() -> list[str]:
    """pyproject's dependencies (torch left out) and EXTRA, pinned to the versions installed
    here where there are any (the versions the project was tested with)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    out = []
    for req in [*project["dependencies"], *EXTRA]:
        name = re.split(r"[\[<>=!~; ]", req, maxsplit=1)[0]
        if canonical(name) in TARGET_HAS:
            continue
        extras = re.search(r"\[[^\]]*\]", req)
        try:
            pinned = f"{name}{extras.group(0) if extras else ''}=={importlib.metadata.version(name)}"
        except importlib.metadata.PackageNotFoundError:
            pinned = req
        out.append(pinned)
    return out


def pip(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", *args], text=True, **kw)


def closure(folder: Path) -> Path:
    """Beside the folder, not in it (it would travel too): every wheel downloaded."""
    return folder.with_name(folder.name + "-all")


def download(folder: Path, peer: bool) -> None:
    full = closure(folder)  # the whole closure; only what TARGET_HAS leaves out is copied
    full.mkdir(parents=True, exist_ok=True)
    for reqs, deps in ((requirements(), []), (PEER if peer else [], ["--no-deps"])):
        done = pip("download", "-q", *PLATFORM, *deps, "-d", str(full), *reqs) if reqs else None
        if done and done.returncode:
            raise SystemExit(f"gpu_prepare: pip download failed ({done.returncode}) for {reqs}")
    if peer:
        _peer_extras(full)
    for wheel in folder.glob("*.whl"):  # what an earlier run shipped and the target now has
        if canonical(wheel.name.split("-")[0]) in TARGET_HAS:
            wheel.unlink()
    for wheel in full.glob("*.whl"):
        target = folder if canonical(wheel.name.split("-")[0]) not in TARGET_HAS else None
        if target is not None:
            shutil.copy2(wheel, target / wheel.name)
    if peer:
        _peer_sdist(folder)


def _peer_extras(full: Path) -> None:
    """gym 0.23.1 has no wheel on PyPI: build one here (pure Python, so any Python makes the
    same py3-none-any wheel)."""
    if list(full.glob("gym-0.23*.whl")):
        return
    done = pip("wheel", "-q", "--no-deps", "-w", str(full), "gym==0.23.1")
    if done.returncode:
        raise SystemExit("gpu_prepare: could not build a wheel of gym 0.23.1 (PufferLib 3.0 "
                         "imports gym); pass --no-peer to prepare without PufferLib")


def _peer_sdist(folder: Path) -> None:
    """PufferLib's sdist without pufferlib/resources (sprites and fonts for rendering).

    pip cannot save this sdist whole: to read its metadata pip runs its setup.py, which
    downloads raylib for the web and Box2D from GitHub first (and fails where GitHub is out of
    reach, as here). pip has unpacked the sdist by then, and `--no-clean` keeps that tree in
    our TMPDIR; it is packed again from there, less the resources and pip's egg-info."""
    if list(folder.glob("pufferlib-3.0*-trimmed.tar.gz")):
        return
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "TMPDIR": tmp}
        done = pip("download", "-q", "--no-deps", "--no-binary", ":all:", "--no-clean",
                   "--no-build-isolation", "-d", tmp, PEER_SDIST, env=env,
                   capture_output=True)
        trees = [p.parent for p in Path(tmp).glob("pip-*/*/PKG-INFO")
                 if "Name: pufferlib" in p.read_text(errors="replace")]
        if not trees:
            raise SystemExit("gpu_prepare: pip did not fetch PufferLib's sdist (exit "
                             f"{done.returncode}); pass --no-peer to prepare without PufferLib")
        tree = trees[0]
        version = re.search(r"^Version: (.+)$", (tree / "PKG-INFO").read_text(), re.M)[1]
        top = f"pufferlib-{version}"
        dropped = 0
        with tarfile.open(folder / f"{top}-trimmed.tar.gz", "w:gz") as dst:
            for path in sorted(tree.rglob("*")):
                rel = path.relative_to(tree)
                if rel.parts[:2] == ("pufferlib", "resources") or \
                        rel.parts[0].endswith(".egg-info"):
                    dropped += path.stat().st_size if path.is_file() else 0
                    continue
                if path.is_file():
                    dst.add(path, f"{top}/{rel.as_posix()}", recursive=False)
    (folder / "pufferlib-sdist.json").write_text(json.dumps(
        {"version": version, "fetched_by": f"pip download {PEER_SDIST} --no-binary :all:",
         "dropped": ["pufferlib/resources/", "pufferlib.egg-info/"],
         "dropped_bytes": dropped}, indent=1) + "\n")


def check(folder: Path, peer: bool) -> list[str]:
    """Problems with the folder ([] if none): pip resolves every requirement for Python 3.12
    with no index, from the folder and TARGET_HAS alone."""
    problems = []
    wheels = sorted(folder.glob("*.whl"))
    seen: dict[str, str] = {}
    for wheel in wheels:
        name = canonical(wheel.name.split("-")[0])
        if name in seen:
            problems.append(f"two versions of {name}: {seen[name]} and {wheel.name}")
        seen[name] = wheel.name
    reqs = requirements() + (PEER if peer else []) + (["gym==0.23.1"] if peer else [])
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        links = ["--find-links", str(folder), "--find-links", str(_torch_stand_in(Path(tmp)))]
        if closure(folder).is_dir():  # its TARGET_HAS wheels stand for the image's packages
            links += ["--find-links", str(closure(folder))]
        done = pip("install", "--dry-run", "--ignore-installed", "--no-index", *links,
                   *PLATFORM, "--target", str(Path(tmp) / "t"), "--report", str(report),
                   "-q", *reqs, capture_output=True)
        if done.returncode:
            problems.append("pip cannot resolve the set with no index: "
                            + done.stderr.strip().splitlines()[-1:][0] if done.stderr.strip()
                            else f"pip exited {done.returncode}")
            return problems
        for item in json.loads(report.read_text())["install"]:
            name = canonical(item["metadata"]["name"])
            if name not in seen and name not in TARGET_HAS:
                problems.append(f"{name} is needed but not in {folder.name}/")
    if peer and not list(folder.glob("pufferlib-3.0*-trimmed.tar.gz")):
        problems.append("PufferLib's sdist is missing (run without --check-only)")
    return problems


def _torch_stand_in(tmp: Path) -> Path:
    """A wheel named torch 2.11.0 with nothing in it, in a folder of its own: the dry run
    resolves the packages that need torch against the target's torch, as the install there
    does, without fetching torch."""
    folder = tmp / "torch-stand-in"
    folder.mkdir()
    import zipfile

    info = "torch-2.11.0.dist-info"
    with zipfile.ZipFile(folder / "torch-2.11.0-py3-none-any.whl", "w") as whl:
        whl.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0\n")
        whl.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: gpu_prepare\n"
                                      "Root-Is-Purelib: true\nTag: py3-none-any\n")
        whl.writestr(f"{info}/RECORD", "")
    return folder


def shipped_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file())


def tree_bytes() -> int:
    """What travels besides the folder: tracked files and untracked ones git does not ignore."""
    listing = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], cwd=ROOT, capture_output=True, check=True)
    paths = [ROOT / p for p in listing.stdout.decode().split("\0") if p]
    return sum(p.stat().st_size for p in paths if p.is_file())


def command_line(folder: str) -> str:
    """The one line run there, from the repository root (the device tool's working dir):
    tools/gpu_run.sh installs the folder's wheels, builds the tree and runs every phase."""
    return f"WHEELS={shlex.quote(folder)} bash tools/gpu_run.sh"


def ignore_locally(folder: str) -> None:
    """Keep the folder out of git (it travels through the device tool's `carry`)."""
    exclude = subprocess.run(["git", "rev-parse", "--git-path", "info/exclude"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.strip()
    path = (ROOT / exclude) if not os.path.isabs(exclude) else Path(exclude)
    line = f"/{folder}/"
    text = path.read_text() if path.exists() else ""
    if line not in text.splitlines():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + ("" if text.endswith("\n") or not text else "\n") + line + "\n")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python tools/gpu_prepare.py", description=__doc__.split(
        "\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--folder", default=FOLDER, help=f"relative to the repo root ({FOLDER})")
    p.add_argument("--no-peer", action="store_true", help="leave PufferLib out")
    p.add_argument("--check-only", action="store_true", help="download nothing; check")
    p.add_argument("--limit-mib", type=float, default=LIMIT_MIB)
    args = p.parse_args(argv)
    if Path(args.folder).is_absolute() or ".." in Path(args.folder).parts:
        print(f"gpu_prepare: --folder must be a path inside the repository, got "
              f"{args.folder!r}", file=sys.stderr)
        return 2
    folder = ROOT / args.folder
    peer = not args.no_peer
    if not args.check_only:
        folder.mkdir(parents=True, exist_ok=True)
        ignore_locally(args.folder)
        ignore_locally(closure(Path(args.folder)).as_posix())
        download(folder, peer)
    elif not folder.is_dir():
        print(f"gpu_prepare: {folder} does not exist; run without --check-only first",
              file=sys.stderr)
        return 2
    problems = check(folder, peer)
    shipped, tree = shipped_bytes(folder), tree_bytes()
    total_mib = (shipped + tree) / 2**20
    if total_mib > args.limit_mib:
        problems.append(f"{args.folder}/ ({shipped / 2**20:.1f} MiB) and the tree "
                        f"({tree / 2**20:.1f} MiB) make {total_mib:.1f} MiB, over "
                        f"{args.limit_mib:g} MiB")
    print(f"{args.folder}/: {len(list(folder.glob('*.whl')))} wheels"
          f"{' + PufferLib sdist' if peer else ''}, {shipped / 2**20:.1f} MiB; with the tree "
          f"{total_mib:.1f} MiB of {args.limit_mib:g}")
    for problem in problems:
        print(f"gpu_prepare: {problem}", file=sys.stderr)
    line = command_line(args.folder)
    (folder / "command.txt").write_text(line + "\n")
    print(f"device run: carry [{args.folder!r}], command ({len(line)} chars):\n{line}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
