"""File I/O of `godot-rag scan`: reading the project's scripts and settings, writing the outputs atomically."""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import zipfile

# A .gd file over this is listed as skipped, not read (`scan --max-file-bytes` moves it): real scripts stay far
# under it (the Godot demos' largest is 60 KB), and a scan's time grows with the bytes it reads.
DEFAULT_MAX_FILE_BYTES = 2 * 2**20


def read_script(path: Path, max_bytes: int | None = None) -> tuple[str | None, str | None]:
    """(text, None), or (None, a one-line reason) for a file that cannot be read, is over `max_bytes` or is
    not UTF-8. A UTF-8 byte-order mark is dropped and CRLF line ends become LF (the chunks keep the file's lines)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read() if max_bytes is None else fh.read(max_bytes + 1)
    except OSError as e:
        return None, f"cannot be read ({e.strerror or e.__class__.__name__})"
    if max_bytes is not None and len(data) > max_bytes:
        return None, f"over {max_bytes} bytes: skipped (scan --max-file-bytes raises the limit)"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        return None, f"not UTF-8 (byte {e.start}, line {line})"
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n"), None


def read_small_text(path: Path, limit: int = 2_000_000) -> str | None:
    """A settings file (`project.godot`, `.gitignore`) as text; None when missing or unreadable."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit)
    except OSError:
        return None
    return data.decode("utf-8", "replace")


def _atomic_write(path: Path, data: bytes | Iterable[bytes]) -> None:
    """Written beside the target, then renamed over it: a reader never sees half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            if isinstance(data, bytes):
                fh.write(data)
            else:
                for part in data:
                    fh.write(part)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would hide the report from the user's group
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(path: Path, text: str) -> None:
    _atomic_write(path, text.encode("utf-8"))


def write_json(path: Path, value: Any) -> None:
    # Compact: the indented form goes through the pure-Python encoder, 5x slower on a large SARIF file.
    write_text(path, json.dumps(value, ensure_ascii=False) + "\n")


def write_jsonl(path: Path, rows: Iterable[dict]) -> int:
    count = [0]

    def lines() -> Iterator[bytes]:
        for row in rows:
            count[0] += 1
            yield (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8")

    _atomic_write(path, lines())
    return count[0]


def git_changed_files(root: Path, ref: str) -> set[Path]:
    """Files under `root` changed since the git ref `ref` (committed, staged or not) and new untracked
    files. Raises ValueError with git's own one-line reason."""
    import subprocess

    def git(*args: str) -> str:
        try:
            r = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=120)
        except FileNotFoundError:
            raise ValueError("--changed-since needs git, and git is not installed") from None
        except subprocess.TimeoutExpired:
            raise ValueError("git did not answer within 120 s") from None
        if r.returncode != 0:
            first = (r.stderr.strip().splitlines() or ["git failed"])[0]
            raise ValueError(f"git: {first}")
        return r.stdout

    top = Path(git("rev-parse", "--show-toplevel").strip())
    if ref.startswith("-"):
        raise ValueError(f"--changed-since: {ref!r} is not a git ref")
    try:
        git("rev-parse", "--verify", "--quiet", ref + "^{commit}")
    except ValueError:
        raise ValueError(f"--changed-since: {ref!r} is not a commit of the git repository {top}") from None
    names = git("diff", "--name-only", "-z", ref, "--").split("\0")
    names += git("ls-files", "-z", "--others", "--exclude-standard", "--full-name").split("\0")
    return {(top / n).resolve() for n in names if n}


def check_out_dir(path: Path) -> str | None:
    """None when the output directory can be created and written; otherwise the reason."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        return f"{path}: exists and is not a directory"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return f"{path}: cannot create the output directory ({e.strerror})"
    if not os.access(path, os.W_OK):
        return f"{path}: the output directory is not writable"
    return None


# -- uploaded projects ---------------------------------------------------------------------------------
PROJECT_FILES = (".gd", "project.godot", ".gitignore")


class ZipRejected(ValueError):
    """An upload that is not a safe, reasonable zip; `status` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class _ZipLimits:
    entries: int
    total: int  # bytes, all files together
    file: int  # bytes, one file
    ratio: int  # the most a file over 1 MiB may be compressed


def extract_project_zip(data: bytes, dest: Path, *, max_entries: int = 20_000, max_total: int = 200 * 2**20,
                        max_file: int = 20 * 2**20, max_ratio: int = 200) -> int:
    """Extract the scripts and settings (`*.gd`, `project.godot`, `.gitignore`) of an uploaded zip into
    `dest`; everything else is left out. Refused: not a zip, encrypted entries, absolute paths, `..`,
    too many entries, too many bytes (counted while extracting, not taken from the headers), a
    suspicious compression ratio. Links are skipped. Returns the number of files written."""
    limits = _ZipLimits(max_entries, max_total, max_file, max_ratio)
    dest = Path(dest).resolve()
    zf, infos = _open_zip(data, limits)
    written = total = 0
    with zf:
        for info in infos:
            target = _entry_target(info, dest, limits)
            if target is not None:
                total = _unpack(zf, info, target, limits, total)
                written += 1
    return written


def _open_zip(data: bytes, limits: _ZipLimits) -> tuple[zipfile.ZipFile, list[zipfile.ZipInfo]]:
    import io
    import zipfile

    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as e:
        raise ZipRejected(f"not a valid zip file ({e})", 400) from None
    if len(infos) > limits.entries:
        raise ZipRejected(f"the zip has {len(infos)} entries; the limit is {limits.entries}", 413)
    if sum(i.file_size for i in infos) > limits.total:
        raise ZipRejected(f"the zip unpacks to more than {limits.total // 2**20} MiB", 413)
    return zf, infos


def _entry_target(info: zipfile.ZipInfo, dest: Path, limits: _ZipLimits) -> Path | None:
    """Where an entry goes under `dest`; None for one left out (a folder, a link, not a project file)."""
    import re
    import stat
    from pathlib import PurePosixPath

    name = info.filename.replace("\\", "/")
    if info.is_dir():
        return None
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name) or ".." in PurePosixPath(name).parts or "\0" in name:
        raise ZipRejected(f"unsafe path in the zip: {name[:200]!r}", 400)
    if info.flag_bits & 0x1:
        raise ZipRejected(f"encrypted entry in the zip: {name[:200]!r}", 400)
    if stat.S_ISLNK(info.external_attr >> 16) or not name.endswith(PROJECT_FILES):
        return None
    if info.file_size > limits.file:
        raise ZipRejected(f"{name[:200]}: {info.file_size} bytes; the limit per file is {limits.file // 2**20} MiB", 413)
    if info.compress_size and info.file_size > 2**20 and info.file_size / info.compress_size > limits.ratio:
        raise ZipRejected(f"{name[:200]}: compression ratio over {limits.ratio}: refused as a zip bomb", 413)
    parts = [p for p in PurePosixPath(name).parts if p not in ("", ".")]
    target = dest.joinpath(*parts).resolve()
    if not target.is_relative_to(dest):
        raise ZipRejected(f"unsafe path in the zip: {name[:200]!r}", 400)
    return target


def _unpack(zf: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, limits: _ZipLimits, total: int) -> int:
    """One entry written to `target`, its bytes counted as they come; returns `total` with them."""
    import zipfile

    name = info.filename.replace("\\", "/")
    target.parent.mkdir(parents=True, exist_ok=True)
    size = 0
    try:
        with zf.open(info) as src, open(target, "wb") as out:
            while True:
                block = src.read(65536)
                if not block:
                    break
                size += len(block)
                total += len(block)
                if size > info.file_size or size > limits.file or total > limits.total:
                    raise ZipRejected(f"{name[:200]}: more data than the zip declares: refused", 413)
                out.write(block)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as e:
        raise ZipRejected(f"{name[:200]}: cannot be unpacked ({e})", 400) from None
    return total


def make_job_dir(prefix: str = "godot-rag-scan-") -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix))


def remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def write_handoff(path: Path, value: Any) -> None:
    """`value` pickled into `path`, whole before anyone can open it (the scan's symbol tables for workers that
    started before the tables were built)."""
    import pickle

    _atomic_write(path, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))


def read_handoff(path: str | Path) -> Any:
    import pickle

    with open(path, "rb") as fh:
        return pickle.load(fh)
