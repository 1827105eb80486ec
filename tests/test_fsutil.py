"""fsutil.atomic_write as seen by an independent reader: old or new content, never less."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nodecli.fsutil import PRIVATE_FILE, atomic_write

# A separate process (own interpreter, no shared GIL) that opens and reads the file as
# fast as it can until told to stop, and reports every content it saw.
READER = textwrap.dedent("""
    import os, sys
    path, stop = sys.argv[1], sys.argv[2]
    seen = {}
    reads = 0
    print("ready", flush=True)
    while not os.path.exists(stop):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            data = b"<missing>"
        reads += 1
        key = data[:1] + str(len(data)).encode() if data else b"<empty>"
        seen[key] = seen.get(key, 0) + 1
        if data and data != data[:1] * len(data):
            seen[b"<mixed>"] = seen.get(b"<mixed>", 0) + 1
    for k, v in seen.items():
        print(k.decode("latin-1"), v)
    print("reads", reads)
""")

SIZE = 256 * 1024


@pytest.mark.parametrize("durable", [True, False])
def test_reader_never_sees_empty_partial_or_missing_content(tmp_path: Path, durable: bool):
    target = tmp_path / "config.toml"
    stop = tmp_path / "stop"
    atomic_write(target, b"A" * SIZE)
    reader = subprocess.Popen([sys.executable, "-c", READER, str(target), str(stop)],
                              stdout=subprocess.PIPE, text=True)
    assert reader.stdout is not None
    assert reader.stdout.readline().strip() == "ready"
    letters = b"BCDEFGHIJKLMNOPQRSTUVWXYZ"
    writes = 0
    try:
        while writes < 400:
            atomic_write(target, letters[writes % len(letters):][:1] * SIZE, durable=durable)
            writes += 1
    finally:
        stop.touch()
        out, _ = reader.communicate(timeout=60)
    lines = dict(line.rsplit(" ", 1) for line in out.splitlines())
    reads = int(lines.pop("reads"))
    assert reads > 0
    bad = {k: v for k, v in lines.items() if not (k[:1].isalpha() and k[1:] == str(SIZE))}
    assert bad == {}, f"reader saw {bad} in {reads} reads"
    assert target.read_bytes() == letters[(writes - 1) % len(letters):][:1] * SIZE
    assert (target.stat().st_mode & 0o777) == PRIVATE_FILE
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_symlink_target_refused_and_left_alone(tmp_path: Path):
    real = tmp_path / "real"
    real.write_bytes(b"keep")
    link = tmp_path / "link"
    os.symlink(real, link)
    with pytest.raises(OSError, match="symbolic link"):
        atomic_write(link, b"new")
    assert real.read_bytes() == b"keep" and link.is_symlink()
