"""A table's records (payloads and search texts) persisted next to the data, read lazily: a new process
maps one local file and unpacks only the rows a query touches, instead of fetching and parsing every
row's JSON from PostgreSQL (the docs are about 40 MB of it).

The file is keyed by the table's records digest (`queries.records_digest`: every row's id, record hash and
text hash, in id order), and it is written under the digest of exactly the rows it holds (computed here
from the fetched rows, the way PostgreSQL computes it), so a changed table never reads an older file.
Layout: an 8-byte header length, a header (format, digest, ids, the blobs' end offsets), then each row's
payload and search text as `marshal` blobs (the payloads are JSON values, which marshal reads back as
they were and several times faster than JSON)."""
from __future__ import annotations

import hashlib
import marshal
import mmap
import struct
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np

from .cache_files import write_replacing

FORMAT = 2  # bump when the layout changes: files of another format are not read
HEADER = struct.Struct("<Q")

Row = tuple[str, dict, str, str, str]  # (id, payload, search_text, text_hash, record_hash)


def rows_digest(rows: list[Row]) -> str:
    """What `queries.records_digest` computes in PostgreSQL, from rows already fetched (in id order)."""
    joined = ",".join(f"{rid}:{record_hash}:{text_hash}" for rid, _, _, text_hash, record_hash in rows)
    return f"{hashlib.md5(joined.encode()).hexdigest() if rows else None}:{len(rows)}"


def cache_path(cache_dir: Path, table: str, digest: str) -> Path:
    return Path(cache_dir) / f"records-{table}-{hashlib.sha256(digest.encode()).hexdigest()[:16]}.rec"


class RecordFile(Mapping):
    """id -> payload over a mapped file; a payload is unpacked on first use and kept."""

    def __init__(self, ids: list[str], ends: np.ndarray, data: mmap.mmap, start: int):
        self.ids, self._ends, self._data, self._start = ids, ends, data, start
        self._row = {rid: i for i, rid in enumerate(ids)}
        self._payloads: dict[str, dict] = {}
        self.unpacked_since_freeze = 0  # payloads the garbage collector still walks (`Retriever.freeze_unpacked`)
        self.derived: dict[str, dict] = {}  # per-row values a stage derives from the payloads, kept with them

    def _blob(self, k: int):
        lo = self._start + (int(self._ends[k - 1]) if k else 0)
        return marshal.loads(self._data[lo:self._start + int(self._ends[k])])

    def __getitem__(self, rid: str) -> dict:
        payload = self._payloads.get(rid)
        if payload is None:
            payload = self._payloads[rid] = self._blob(2 * self._row[rid])
            self.unpacked_since_freeze += 1
        return payload

    def __contains__(self, rid: object) -> bool:
        return rid in self._row

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def search_texts(self) -> list[tuple[str, str]]:
        """(id, search_text) of every row (what BM25 counts; read only when its counts are not cached)."""
        return [(rid, self._blob(2 * i + 1)) for i, rid in enumerate(self.ids)]


class FetchedRecords(dict):
    """id -> payload of rows fetched from the database, when no file could be written for them."""

    def __init__(self, rows: list[Row]):
        super().__init__((r[0], r[1]) for r in rows)
        self._texts = [(r[0], r[2]) for r in rows]
        self.derived: dict[str, dict] = {}  # as RecordFile's

    def search_texts(self) -> list[tuple[str, str]]:
        return self._texts


Records = RecordFile | FetchedRecords  # what `Retriever.records` gives: both map id -> payload


def load_rows(cache_dir: Path, table: str, digest: str) -> RecordFile | None:
    """The records of the table whose records digest is `digest`, or None when no file holds them."""
    path = cache_path(cache_dir, table, digest)
    try:
        with open(path, "rb") as f:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        (size,) = HEADER.unpack_from(data, 0)
        header = marshal.loads(data[HEADER.size:HEADER.size + size])
    except (OSError, EOFError, ValueError, TypeError, struct.error):
        return None  # missing or damaged: fetched again
    if not (isinstance(header, tuple) and len(header) == 4 and header[0] == FORMAT and header[1] == digest):
        return None
    ids, ends = header[2], np.frombuffer(header[3], dtype=np.int64)
    start = HEADER.size + size
    if len(ends) != 2 * len(ids) or (len(ends) and start + int(ends[-1]) != len(data)):
        return None
    return RecordFile(ids, ends, data, start)


def save_rows(cache_dir: Path, table: str, rows: list[Row], digest: str | None = None) -> Path | None:
    """Written atomically under the rows' own digest (`digest`, when the caller has computed it); the table's
    other files are removed. None when a payload holds something marshal cannot write, or the folder is
    read-only."""
    digest = digest or rows_digest(rows)
    try:
        blobs = [marshal.dumps(part) for _, payload, text, _, _ in rows for part in (payload, text)]
    except ValueError:
        return None
    ends = np.cumsum([len(b) for b in blobs], dtype=np.int64) if blobs else np.zeros(0, dtype=np.int64)
    header = marshal.dumps((FORMAT, digest, [r[0] for r in rows], ends.tobytes()))

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            f.write(HEADER.pack(len(header)))
            f.write(header)
            for blob in blobs:
                f.write(blob)

    try:
        return write_replacing(cache_path(cache_dir, table, digest), write, f"records-{table}-*.rec")
    except OSError:
        return None  # a read-only cache folder: the rows are fetched every time
