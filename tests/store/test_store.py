import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from godot_rag.records import RecordError
from godot_rag.store import queries
from godot_rag.store.db import Database, StoreError, StoreUnavailable
from godot_rag.store.embed import embed_rows, pending_count
from godot_rag.store.load import load_jsonl


def edited_copy(src, dst, edit):
    """A copy of the JSONL directory whose docs_chunks.jsonl lines went through `edit(lines)`."""
    shutil.copytree(src, dst)
    path = dst / "docs_chunks.jsonl"
    lines = path.read_text().splitlines()
    edit(lines)
    path.write_text("\n".join(lines) + "\n")
    return dst


def counts(db):
    with db.connect() as conn:
        return {t: v["rows"] for t, v in queries.counts(conn).items()}


def test_load_is_idempotent_and_columns_are_typed(fixture_db, fixture_jsonl):
    before = counts(fixture_db)
    stats = load_jsonl(fixture_db, fixture_jsonl, quiet=True)
    assert stats.skipped  # nothing changed
    stats = load_jsonl(fixture_db, fixture_jsonl, quiet=True, force=True)
    assert all(v["inserted_or_updated"] == 0 for v in stats.tables.values())  # same content: no writes
    assert counts(fixture_db) == before
    with fixture_db.connect() as conn:
        row = conn.execute("SELECT section_path, code_blocks, api_symbols, token_count, search_tsv IS NOT NULL "
                           "FROM docs_chunks WHERE content LIKE '%%position.clamp%%' LIMIT 1").fetchone()
        assert isinstance(row[0], list) and isinstance(row[1], list) and isinstance(row[3], int) and row[4]
        types = dict(conn.execute("SELECT column_name, data_type FROM information_schema.columns "
                                  "WHERE table_name = 'api_mapping'").fetchall())
        assert types["evidence_chunk_ids"] == "ARRAY" and types["confidence"] == "double precision"
        assert types["embedding"] == "USER-DEFINED"


@pytest.mark.parametrize("mutate,field,line", [
    (lambda recs: recs.__setitem__(1, "{not json"), None, 2),
    (lambda recs: recs.__setitem__(2, json.dumps({k: v for k, v in json.loads(recs[2]).items() if k != "content"})),
     "content", 3),
    (lambda recs: recs.__setitem__(0, json.dumps(dict(json.loads(recs[0]), token_count="many"))), "token_count", 1),
    (lambda recs: recs.__setitem__(4, json.dumps(dict(json.loads(recs[4]), heading="A\u0000B"))), "heading", 5),
])
def test_bad_file_changes_nothing(make_database, fixture_jsonl, tmp_path, mutate, field, line):
    db = make_database(f"bad-{line}")
    load_jsonl(db, fixture_jsonl, quiet=True)
    before = counts(db)
    def edit(lines):
        # also change a good row, to prove the whole load is rolled back
        first = json.loads(lines[3])
        first["content"] += " CHANGED"
        lines[3] = json.dumps(first)
        mutate(lines)

    bad = edited_copy(fixture_jsonl, tmp_path / "jsonl", edit)
    with pytest.raises(RecordError) as err:
        load_jsonl(db, bad, quiet=True)
    assert err.value.file.endswith("docs_chunks.jsonl") and err.value.line == line and err.value.field == field
    assert f"docs_chunks.jsonl:{line}" in str(err.value)
    assert counts(db) == before
    with db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM docs_chunks WHERE content LIKE '%%CHANGED'").fetchone()[0] == 0


def test_embed_only_changed_rows_and_resume(make_database, fixture_jsonl, embedder, tmp_path):
    db = make_database("embed")
    load_jsonl(db, fixture_jsonl, quiet=True)
    with db.connect() as conn:
        total = pending_count(conn, "docs_chunks", embedder.key_hash)
    stats = embed_rows(db, embedder, batch_rows=4, quiet=True)
    assert stats.embedded["docs_chunks"] == total and "docs_chunks" in stats.indexed
    assert embed_rows(db, embedder, quiet=True).embedded == {"docs_chunks": 0, "api_mapping": 0, "label_prototypes": 0}
    # change one chunk's content: exactly that row is embedded again
    def edit(lines):
        rec = json.loads(lines[0])
        rec["content"] += "\nMore words."
        lines[0] = json.dumps(rec)

    changed = edited_copy(fixture_jsonl, tmp_path / "jsonl", edit)
    load_jsonl(db, changed, quiet=True)
    assert embed_rows(db, embedder, quiet=True).embedded["docs_chunks"] == 1
    # a half-done run (as after Ctrl-C) resumes where it stopped
    with db.connect() as conn:
        conn.execute("UPDATE docs_chunks SET embedding = NULL WHERE chunk_id IN (SELECT chunk_id FROM docs_chunks LIMIT 3)")
        conn.commit()
    assert embed_rows(db, embedder, quiet=True).embedded["docs_chunks"] == 3


def test_windowed_encoding_covers_long_text(embedder):
    long = "func a():\n    pass\n" * 200
    assert embedder.window_count(long) > 1
    from godot_rag.models.embedder import Embedder

    trunc = Embedder(pooling="truncate")
    trunc._model = embedder.load()
    assert trunc.window_count(long) == 1
    tail_text = "func a():\n    pass\n" * 150 + "position = position.clamp(Vector2.ZERO, screen_size)\n" * 20
    v_win, v_tail = embedder.encode([tail_text, "position = position.clamp(Vector2.ZERO, screen_size)"])
    t_win = trunc.encode([tail_text])[0]
    assert float(v_win @ v_tail) > float(t_win @ v_tail)  # the window-mean sees the tail; truncation cannot


def test_a_query_encodes_its_windows_one_at_a_time(embedder):
    """A one-window query gets the very vector the records' batched encoding gives; a longer one the unit mean of its
    windows each encoded alone (no padding of its short last window), close to the batched mean."""
    import numpy as np

    short = "func _ready():\n\tposition = position.clamp(Vector2.ZERO, screen_size)\n"
    vector, windows = embedder.encode_query(short)
    assert windows == 1 and np.array_equal(vector, embedder.encode([short])[0])
    long = "func a():\n    pass\n" * 150 + "position = position.clamp(Vector2.ZERO, screen_size)\n" * 20
    vector, windows = embedder.encode_query(long)
    assert windows == embedder.window_count(long) > 1
    alone = np.sum([embedder.encode([w])[0] for w in embedder.windows(long)], axis=0)
    assert np.allclose(vector, alone / np.linalg.norm(alone), atol=1e-6)
    assert 0.98 < float(vector @ embedder.encode([long])[0]) < 1.0


def test_a_one_window_query_is_tokenized_once(embedder, monkeypatch):
    """A query that fits one window is tokenized once, for the encoder, not first cut into windows: the same
    vector and count as before. A longer one is cut as before."""
    import numpy as np

    model = embedder.load()
    short = "func _ready():\n\tposition = position.clamp(Vector2.ZERO, screen_size)\n"
    expected = embedder.encode([short])[0]
    long = "func a():\n    pass\n" * 150
    assert model.encode_whole(long) is None
    monkeypatch.setattr(type(model), "piece_offsets", lambda self, text: pytest.fail("the query was cut into windows"))
    vector, windows = embedder.encode_query(short)
    assert windows == 1 and vector.tobytes() == expected.tobytes() and np.isclose(np.linalg.norm(vector), 1.0)
    with pytest.raises(pytest.fail.Exception):
        embedder.encode_query(long)


def test_unreachable_dsn():
    db = Database(dsn="postgresql://nobody@127.0.0.1:1/none")
    with pytest.raises(StoreUnavailable, match="unreachable"):
        db.connect()


PG15 = Path("/usr/lib/postgresql/15/bin")


@pytest.mark.skipif(not (PG15 / "initdb").exists(), reason="Debian's postgresql-15 server is not installed")
def test_own_server_without_pgvector_says_how_to_fix(fixture_jsonl):
    """A real PostgreSQL 15 (Debian's, which has no pgvector) reached by DSN."""
    import tempfile

    tmp_path = Path(tempfile.mkdtemp(prefix="godot-rag-pg15-"))
    tmp_path.chmod(0o755)
    data = tmp_path / "pg15"
    sock = tmp_path / "sock"
    sock.mkdir()
    shutil.chown(tmp_path, "postgres")
    shutil.chown(sock, "postgres")
    run = ["runuser", "-u", "postgres", "--"]
    subprocess.run([*run, str(PG15 / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"], check=True,
                   capture_output=True)
    subprocess.run([*run, str(PG15 / "pg_ctl"), "-D", str(data), "-l", str(tmp_path / "log"),
                    "-o", f"-k {sock} -h '' -p 55439", "-w", "start"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    try:
        db = Database(dsn=f"postgresql://postgres@/postgres?host={sock}&port=55439")
        with pytest.raises(StoreError, match=r"no 'vector' extension.*CREATE EXTENSION vector"):
            load_jsonl(db, fixture_jsonl, quiet=True)
    finally:
        subprocess.run([*run, str(PG15 / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        shutil.rmtree(tmp_path, ignore_errors=True)


def test_embedded_server_survives_a_killed_cli(make_database, fixture_jsonl):
    """A CLI killed with SIGKILL leaves the embedded server running; the next command reattaches."""
    db = make_database("crash")
    code = ("import os, sys; from godot_rag.store.db import Database; from godot_rag.store.load import load_jsonl;"
            f"db = Database(data_dir={str(db.data_dir)!r}); load_jsonl(db, {str(fixture_jsonl)!r}, quiet=True);"
            "os.kill(os.getpid(), 9)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True)
    assert proc.returncode == -9
    assert counts(db)["docs_chunks"] > 0


def test_bm25_index_is_persisted_and_rebuilt_only_on_change(fixture_db, tmp_path):
    from godot_rag.gdscript.tokenize import TokenizerConfig
    from godot_rag.retrieve.engine.config import RetrieveConfig
    from godot_rag.retrieve.pipeline import Retriever
    from godot_rag.retrieve.recall.indexes import BM25_PARAM_SLOTS
    from godot_rag.store.bm25_cache import load_counts

    r = Retriever(fixture_db, cache_dir=tmp_path)
    default = r.bm25.index("docs_chunks", TokenizerConfig(), RetrieveConfig())
    files = list(tmp_path.glob("bm25-docs_chunks-*.npz"))
    assert len(files) == 1
    with fixture_db.connect() as conn:
        digest = queries.records_digest(conn, "docs_chunks")  # the counts are keyed by the whole records
    ids = list(r.records("docs_chunks"))
    assert load_counts(tmp_path, "docs_chunks", digest, TokenizerConfig().key(), ids) is not None  # a hit never tokenizes
    assert load_counts(tmp_path, "docs_chunks", digest, TokenizerConfig().key(), ids[:-1]) is None  # other content: rebuilt
    # Another tokenizer setting (a request's `tokenizer_parts`) adds its own file and never deletes the default one.
    r.bm25.index("docs_chunks", TokenizerConfig(parts=True), RetrieveConfig(tokenizer_parts=True))
    assert set(files) < set(tmp_path.glob("bm25-docs_chunks-*.npz"))
    # k1/b chosen per request share the counts, and only a few variants are kept.
    for i in range(BM25_PARAM_SLOTS + 4):
        idx = r.bm25.index("docs_chunks", TokenizerConfig(), RetrieveConfig(k1=0.5 + i / 10))
        assert idx.tf is default.tf and idx.params.k1 == 0.5 + i / 10
    assert len(r.bm25._weighted) == BM25_PARAM_SLOTS


def test_broken_handle_list_is_repaired(make_database, fixture_jsonl):
    """A CLI killed while the embedded server library wrote its pid list must not block later starts."""
    db = make_database("broken-pids")
    load_jsonl(db, fixture_jsonl, quiet=True)
    db.stop()
    (db.data_dir / ".handle_pids.json").write_text("")
    again = Database(data_dir=db.data_dir)
    assert counts(again)["docs_chunks"] > 0
    again.stop()


def test_a_load_that_would_delete_most_of_a_table_is_refused(make_database, fixture_jsonl, tmp_path):
    from godot_rag.store.db import StoreError

    db = make_database("prune-guard")
    load_jsonl(db, fixture_jsonl, quiet=True)
    before = counts(db)
    empty = edited_copy(fixture_jsonl, tmp_path / "jsonl", lambda lines: lines.__delitem__(slice(0, None)))
    with pytest.raises(StoreError, match=r"would delete \d+ of \d+ docs_chunks rows.*--prune-all"):
        load_jsonl(db, empty, quiet=True)
    assert counts(db) == before  # nothing stored is lost
    stats = load_jsonl(db, empty, quiet=True, prune_all=True)
    assert stats.tables["docs_chunks"]["deleted"] == before["docs_chunks"]


def test_retrieve_on_an_empty_database_says_what_to_run(make_database):
    from godot_rag.retrieve.pipeline import Retriever
    from godot_rag.store.db import StoreError
    from godot_rag.store.schema import ensure_schema

    db = make_database("empty")
    with db.connect() as conn:
        ensure_schema(conn, db.describe())
        conn.commit()
    with pytest.raises(StoreError, match="the database is empty: run `godot-rag ingest` and `load`"):
        Retriever(db).retrieve("func f():\n    pass", "B")


def test_sigterm_on_serve_stops_its_embedded_postgres(make_database, fixture_jsonl):
    import os
    import signal
    import time

    import psutil

    from conftest import free_port, start_http_server

    db = make_database("serve-sigterm")
    load_jsonl(db, fixture_jsonl, quiet=True)
    db.stop()  # only `serve` holds the server from here on
    data = str(db.data_dir)

    def postgres_for_data_dir():
        out = []
        for p in psutil.process_iter(["name", "cmdline"]):
            cmd = p.info.get("cmdline") or []
            if p.info.get("name", "").startswith("postgres") and data in cmd:
                out.append(p)
        return out

    port = free_port()
    proc = start_http_server([sys.executable, "-m", "godot_rag.cli", "serve", "--no-warm", "--port", str(port),
                              "--data-dir", data], f"http://127.0.0.1:{port}", "/api/strategies")
    import httpx

    r = httpx.post(f"http://127.0.0.1:{port}/api/retrieve", json={"chunkText": "func f():\n    pass", "strategy": "B"},
                   timeout=60)
    assert r.status_code == 200 and postgres_for_data_dir()
    os.kill(proc.pid, signal.SIGTERM)
    proc.wait(timeout=60)
    for _ in range(60):
        if not postgres_for_data_dir():
            break
        time.sleep(0.5)
    assert not postgres_for_data_dir()


def test_sigterm_on_any_command_stops_its_embedded_postgres(make_database, fixture_jsonl):
    """`retrieve --batch -` reading a pipe holds the server; SIGTERM (what `kill` and `timeout` send) ends it like
    Ctrl-C, so the server it started stops too (before, Python died at once and left it running)."""
    import os
    import signal
    import time

    import psutil

    db = make_database("batch-sigterm")
    load_jsonl(db, fixture_jsonl, quiet=True)
    db.stop()  # only the command holds the server from here on
    data = str(db.data_dir)

    def postgres_for_data_dir():
        return [p for p in psutil.process_iter(["name", "cmdline"])
                if p.info.get("name", "").startswith("postgres") and data in (p.info.get("cmdline") or [])]

    proc = subprocess.Popen([sys.executable, "-m", "godot_rag.cli", "retrieve", "--batch", "-", "--workers", "1",
                             "--strategy", "B", "--quiet", "--data-dir", data],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        proc.stdin.write(json.dumps({"chunkText": "func f():\n    pass"}) + "\n")
        proc.stdin.flush()
        assert proc.stdout.readline(), proc.stderr.read()[-2000:]  # answered: the server is up, the pipe still open
        assert postgres_for_data_dir()
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM
    for _ in range(60):
        if not postgres_for_data_dir():
            break
        time.sleep(0.5)
    assert not postgres_for_data_dir()


SIGNAL_IN_A_CALLBACK = """
import ctypes, os, signal, sys
from godot_rag import cli

@cli.main.command("callback-probe")
def probe():
    # As numba compiling for ranx: the library calls back into Python, and the signal lands in that callback.
    def notify():
        os.kill(os.getpid(), getattr(signal, sys.argv[1]))
        sum(range(1000))  # the handler runs here, inside the callback, where its exception cannot leave
    ctypes.CFUNCTYPE(None)(notify)()
    raise RuntimeError("no compiled object yet")  # what the library then fails with

cli.main(["callback-probe"])
"""


@pytest.mark.parametrize("name, code, message", [("SIGTERM", 143, ""), ("SIGINT", 130, "error: interrupted\n")])
def test_a_signal_that_lands_in_a_library_callback_still_ends_the_command_quietly(name, code, message):
    """A signal's exception raised inside a C library's callback cannot leave it: Python reports it as
    "unraisable" and the library fails with an error of its own. The command still ends as the signal asked
    (143 for SIGTERM, 130 for Ctrl-C), with no traceback and no error line of the library's."""
    done = subprocess.run([sys.executable, "-c", SIGNAL_IN_A_CALLBACK, name], capture_output=True, text=True, timeout=120)
    assert done.returncode == code, done.stderr[-2000:]
    assert done.stderr == message

def test_concurrent_forced_loads_take_turns(make_database, fixture_jsonl):
    """Two `load --force` processes at once on one database: both finish (an advisory lock), none deadlocks."""
    db = make_database("two-loads")
    load_jsonl(db, fixture_jsonl, quiet=True)
    code = ("import sys; from godot_rag.store.db import Database; from godot_rag.store.load import load_jsonl; "
            "db = Database(data_dir=sys.argv[1]); load_jsonl(db, sys.argv[2], quiet=True, force=True); db.stop()")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(db.data_dir), str(fixture_jsonl)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-400:] for _, err in outs]
    assert counts(db)["docs_chunks"] > 0


def test_a_killed_embedded_server_is_started_again_on_the_next_request(make_database, fixture_jsonl, tmp_path):
    """`serve` keeps answering after its embedded PostgreSQL is killed: the next request starts it again."""
    import os
    import signal
    import time

    from godot_rag.retrieve.pipeline import Retriever

    db = make_database("restart")
    load_jsonl(db, fixture_jsonl, quiet=True)
    r = Retriever(db, cache_dir=tmp_path)
    assert r.retrieve("func _ready():\n    $Timer.start()", "B").results
    pid = int((db.data_dir / "postmaster.pid").read_text().split()[0])
    os.kill(pid, signal.SIGKILL)
    for _ in range(50):
        try:
            os.kill(pid, 0)
            time.sleep(0.1)
        except ProcessLookupError:
            break
    again = r.retrieve("func _ready():\n    $Timer.start()", "A")  # A queries the database itself
    assert again.trace.tsquery and (db.data_dir / "postmaster.pid").exists()
    assert int((db.data_dir / "postmaster.pid").read_text().split()[0]) != pid


def test_plain_torch_minilm_gives_sentence_transformers_vectors():
    """The cold-start encoder (models/minilm.py) must give the vectors the rows were embedded with."""
    import numpy as np

    from godot_rag.models.embedder import Embedder, _SentenceTransformerModel, resolve_model_path
    from godot_rag.models.minilm import SentenceEncoder

    texts = ["extends CharacterBody2D\n\nfunc _physics_process(delta):\n\tmove_and_slide()",
             "func a():\n    pass\n" * 120, "", "  Vector2.ZERO  ", "Émoji 🎮 and tabs\t\there"]
    for precision in ("int8", "fp32"):
        ours = Embedder(precision=precision, engine="torch")
        assert isinstance(ours.load(), SentenceEncoder)
        theirs = Embedder(precision=precision, engine="torch")
        theirs._model = _SentenceTransformerModel(resolve_model_path(theirs.model_name), precision == "int8")
        assert [ours.window_count(t) for t in texts] == [theirs.window_count(t) for t in texts]
        cos = (ours.encode(texts) * theirs.encode(texts)).sum(axis=1)
        assert float(np.min(cos)) > 0.99999, (precision, cos)


def test_model_loading_is_its_own_trace_step_and_b_never_imports_torch(fixture_db, tmp_path):
    import subprocess
    import sys

    from godot_rag.models.embedder import Embedder
    from godot_rag.retrieve.engine.config import RetrieveConfig
    from godot_rag.retrieve.pipeline import Retriever

    r = Retriever(fixture_db, embedder=Embedder(), cache_dir=tmp_path / "cache")
    first = [s.stage for s in r.retrieve("func f():\n\tqueue_free()", "D", RetrieveConfig()).trace.stages]
    assert first.index("load:embedder") < first.index("embed_query") and "load:bm25" in first
    again = [s.stage for s in r.retrieve("func g():\n\thide()", "D", RetrieveConfig()).trace.stages]
    assert not [s for s in again if s.startswith("load:")]
    code = ("import sys; from godot_rag.store.db import Database; from godot_rag.retrieve.pipeline import Retriever; "
            "from godot_rag.retrieve.engine.config import RetrieveConfig; "
            f"res = Retriever(Database(data_dir={str(fixture_db.data_dir)!r}), cache_dir={str(tmp_path / 'c2')!r})"
            ".retrieve('func f():\\n\\tqueue_free()', 'B', RetrieveConfig()); "
            "assert res.results, 'no results'; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"


def test_embeddings_are_stored_in_their_rows_and_an_older_database_is_rewritten(make_database, fixture_jsonl, embedder):
    """A vector in TOAST costs a fetch per row, and the exact scan of a small table reads every row."""
    from godot_rag.records import SCHEMA
    from godot_rag.store.schema import embedding_column

    db = make_database("inline")
    load_jsonl(db, fixture_jsonl, quiet=True)
    embed_rows(db, embedder, quiet=True)

    def toasted(conn):
        return sum(conn.execute(f"SELECT count(pg_column_toast_chunk_id(embedding)) FROM {t}").fetchone()[0] for t in SCHEMA)

    def storage(conn):
        return {embedding_column(conn, t)[1] for t in SCHEMA}

    with db.connect(autocommit=True) as conn:
        assert storage(conn) == {"p"} and toasted(conn) == 0
        # A database made before: pgvector's EXTERNAL storage, and rows wide enough to move the vector out.
        for t in SCHEMA:
            conn.execute(f"ALTER TABLE {t} SET (toast_tuple_target = 128)")
            conn.execute(f"ALTER TABLE {t} ALTER COLUMN embedding SET STORAGE EXTERNAL")
            conn.execute(f"UPDATE {t} SET embedding = embedding::real[]::vector")
        assert toasted(conn) > 0
        before = conn.execute("SELECT chunk_id, embedding::text FROM docs_chunks ORDER BY 1").fetchall()
    # `embed`, with nothing to embed, moves them into their rows
    stats = embed_rows(db, embedder, quiet=True)
    assert stats.moved_inline["docs_chunks"] == len(before) and not any(stats.embedded.values())
    with db.connect(autocommit=True) as conn:
        assert storage(conn) == {"p"} and toasted(conn) == 0
        assert conn.execute("SELECT chunk_id, embedding::text FROM docs_chunks ORDER BY 1").fetchall() == before


ENCODER_TEXTS = ["extends CharacterBody2D\n\nfunc _physics_process(delta):\n\tmove_and_slide()",
                 "func a():\n    pass\n" * 120, "", "  Vector2.ZERO  ", "Émoji 🎮 and tabs\t\there",
                 "var tween = create_tween()\ntween.tween_property($Sprite, 'modulate', Color.RED, 1.0)"]


def test_onnx_encoder_gives_the_torch_vectors_and_its_own_key(tmp_path):
    """The ONNX graph is the same BERT: fp32 vectors equal torch's (cosine > 0.99999); int8 ones stay close to
    fp32 (mean cosine > 0.9, as torch's int8 ones do), but differ from torch's int8, so the engine is in the key."""
    import numpy as np

    from godot_rag.models.embedder import Embedder
    from godot_rag.models.onnx_bert import OnnxSentenceEncoder

    fp32 = {e: Embedder(precision="fp32", engine=e, cache_dir=tmp_path) for e in ("onnx", "torch")}
    assert isinstance(fp32["onnx"].load(), OnnxSentenceEncoder)
    assert [fp32["onnx"].window_count(t) for t in ENCODER_TEXTS] == [fp32["torch"].window_count(t) for t in ENCODER_TEXTS]
    reference = fp32["torch"].encode(ENCODER_TEXTS)
    assert float(np.min((fp32["onnx"].encode(ENCODER_TEXTS) * reference).sum(axis=1))) > 0.99999
    int8 = Embedder(precision="int8", engine="onnx", cache_dir=tmp_path)
    assert float(np.mean((int8.encode(ENCODER_TEXTS) * reference).sum(axis=1))) > 0.9
    assert len(list(tmp_path.glob("bert-*.onnx"))) == 2  # one cached graph per precision
    keys = {Embedder(engine=e, precision=p).key for e in ("onnx", "torch") for p in ("int8", "fp32")}
    assert len(keys) == 4
    # A database embedded before engines existed names none: its queries keep torch's vectors.
    assert Embedder.from_meta({"model": "all-MiniLM-L6-v2", "precision": "int8"}).engine == "torch"
    assert Embedder.from_meta(Embedder(engine="onnx").meta).key == Embedder(engine="onnx").key


def test_changing_the_engine_re_embeds_every_row(make_database, fixture_jsonl, tmp_path):
    from godot_rag.models.embedder import Embedder
    from godot_rag.retrieve.pipeline import Retriever
    from godot_rag.store.schema import get_meta

    db = make_database("engine-change")
    load_jsonl(db, fixture_jsonl, quiet=True)
    total = sum(counts(db).values())
    first = embed_rows(db, Embedder(engine="torch", cache_dir=tmp_path), quiet=True)
    assert sum(first.embedded.values()) == total
    assert sum(embed_rows(db, Embedder(engine="torch", cache_dir=tmp_path), quiet=True).embedded.values()) == 0
    assert Retriever(db, cache_dir=tmp_path).embedder.engine == "torch"
    onnx = Embedder(engine="onnx", cache_dir=tmp_path)
    assert sum(embed_rows(db, onnx, quiet=True).embedded.values()) == total
    with db.connect() as conn:
        assert get_meta(conn, "embedding")["engine"] == "onnx"
        assert all(pending_count(conn, t, onnx.key_hash) == 0 for t in ("docs_chunks", "api_mapping", "label_prototypes"))
    assert Retriever(db, cache_dir=tmp_path).embedder.key == onnx.key
    db.stop()


def test_records_are_read_from_the_cache_only_while_the_table_is_unchanged(make_database, fixture_jsonl, tmp_path):
    """The records file beside the data is keyed by every row's record and text hash: an edited row, a new
    row or a removed one is fetched from the database again, never served from the older file; so are the
    builds made from the records (the API index here)."""
    from godot_rag.retrieve.pipeline import Retriever
    from godot_rag.store import records_cache

    db = make_database("records-cache")
    load_jsonl(db, fixture_jsonl, quiet=True)
    cache = tmp_path / "cache"
    r = Retriever(db, cache_dir=cache)
    first, first_index = dict(r.records("docs_chunks")), r.api_index()
    files = list(cache.glob("records-docs_chunks-*.rec"))
    assert len(files) == 1 and isinstance(r.records("docs_chunks"), records_cache.RecordFile)
    with db.connect() as conn:
        digest = queries.records_digest(conn, "docs_chunks")
        fetched = queries.fetch_records(conn, "docs_chunks")
    assert records_cache.rows_digest(fetched) == digest  # Python computes PostgreSQL's digest
    cached = records_cache.load_rows(cache, "docs_chunks", digest)
    assert cached is not None and dict(cached) == {row[0]: row[1] for row in fetched}
    assert cached.search_texts() == [(row[0], row[2]) for row in fetched]
    again_r = Retriever(db, cache_dir=cache)
    assert dict(again_r.records("docs_chunks")) == first and again_r.api_index() == first_index
    page_chunk = next(iter(first_index["first"].values()))  # a class page's first chunk: in the API index
    victim = sorted(first)[3]

    def edit(lines):
        kept = []
        for line in lines:
            rec = json.loads(line)
            if rec["chunk_id"] == page_chunk:
                continue  # removed: the API index must not name it any more
            if rec["chunk_id"] == victim:
                rec["source_url"] += "#edited"  # a field, not the search text
            kept.append(json.dumps(rec))
        lines[:] = kept
    edited = edited_copy(fixture_jsonl, tmp_path / "edited", edit)
    load_jsonl(db, edited, quiet=True)
    r = Retriever(db, cache_dir=cache)
    again = dict(r.records("docs_chunks"))
    assert again[victim]["source_url"].endswith("#edited") and page_chunk not in again and len(again) == len(first) - 1
    assert page_chunk not in r.api_index()["first"].values()
    assert len(list(cache.glob("records-docs_chunks-*.rec"))) == 1 and not files[0].exists()
    # A file that holds other rows than its name says (the older ones, or damaged bytes) is not read.
    with db.connect() as conn:
        digest = queries.records_digest(conn, "docs_chunks")
    path = records_cache.cache_path(cache, "docs_chunks", digest)
    records_cache.save_rows(tmp_path / "old", "docs_chunks", fetched)
    older = next((tmp_path / "old").glob("records-docs_chunks-*.rec")).read_bytes()
    for blob in (older, path.read_bytes()[:-10], b"\x00broken"):
        path.write_bytes(blob)
        assert records_cache.load_rows(cache, "docs_chunks", digest) is None
        assert dict(Retriever(db, cache_dir=cache).records("docs_chunks")) == again
    db.stop()


def test_a_first_f_answer_imports_no_torch(fixture_db, tmp_path):
    """The query encoder runs on ONNX Runtime: a new process's first F answer never imports torch (about 1.8 s)."""
    code = ("import sys; from godot_rag.store.db import Database; from godot_rag.retrieve.pipeline import Retriever; "
            f"res = Retriever(Database(data_dir={str(fixture_db.data_dir)!r}), cache_dir={str(tmp_path)!r})"
            ".retrieve('func _process(delta):\\n\\tif Input.is_action_pressed(\"ui_right\"):"
            "\\n\\t\\t$AnimatedSprite2D.play()', 'F'); "
            "assert res.results, 'no results'; "
            "assert any(s.stage == 'embed_query' for s in res.trace.stages); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"


def test_payloads_unpacked_by_queries_are_frozen_out_of_the_collectors_sight(fixture_db, embedder, monkeypatch, tmp_path):
    """Records are unpacked from the file as queries touch them; past FREEZE_AFTER_ROWS of them, a query ends
    with gc.freeze (as records read at load always were), so full collections do not walk them."""
    import gc

    from godot_rag.examples import REFERENCE_CHUNK
    from godot_rag.retrieve import pipeline
    from godot_rag.store import records_cache

    monkeypatch.setattr(pipeline, "FREEZE_AFTER_ROWS", 1)
    r = pipeline.Retriever(fixture_db, embedder=embedder, cache_dir=tmp_path)
    r.records("docs_chunks")  # writes the records file
    r = pipeline.Retriever(fixture_db, embedder=embedder, cache_dir=tmp_path)  # a new process's view: rows unpacked on use
    docs = r.records("docs_chunks")
    assert isinstance(docs, records_cache.RecordFile) and docs.unpacked_since_freeze == 0
    frozen = gc.get_freeze_count()
    r.retrieve(REFERENCE_CHUNK, "D", explain=False)
    assert docs.unpacked_since_freeze == 0 and gc.get_freeze_count() > frozen


def test_vector_searches_are_each_tables_nearest_in_order_in_one_statement(fixture_db, embedder):
    """One statement for every table: each table's rows are its exact nearest, nearest first (the fixture's
    tables are small enough for an ef_search that makes HNSW exact); the search width holds for the session
    of an autocommit connection, and inside a transaction only for that transaction."""
    import numpy as np

    from godot_rag.records import SCHEMA

    vector = embedder.encode(["func _ready():\n\t$Timer.start()"])[0]
    limits = {"docs_chunks": 7, "api_mapping": 5, "label_prototypes": 3}
    with fixture_db.connect(autocommit=True) as conn:
        from pgvector.psycopg import register_vector

        register_vector(conn)
        found = queries.vector_searches(conn, limits, vector, ef_search=1000)
        assert conn.execute("SHOW hnsw.ef_search").fetchone()[0] == "1000"
        for table, limit in limits.items():
            key = SCHEMA[table]["key"]
            rows = conn.execute(f"SELECT {key}, embedding FROM {table} WHERE embedding IS NOT NULL").fetchall()
            cos = sorted(((float(np.dot(vector, e.to_numpy()) / np.linalg.norm(e.to_numpy())), rid) for rid, e in rows),
                         reverse=True)
            assert [rid for rid, _ in found[table]] == [rid for _, rid in cos[:limit]], table
            assert [c for _, c in found[table]] == sorted((c for _, c in found[table]), reverse=True)
        with conn.transaction():
            assert queries.vector_searches(conn, limits, vector, ef_search=64) == found
        assert conn.execute("SHOW hnsw.ef_search").fetchone()[0] == "1000"
