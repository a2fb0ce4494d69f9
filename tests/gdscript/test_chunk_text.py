"""The one check of a chunk's text (godot_rag/chunk_text.py) at every entry point: the library, HTTP
(every strategy), the CLI and `retrieve --batch` (every strategy; one rule for every bad line)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from fastapi.testclient import TestClient

from godot_rag.api.app import create_app
from godot_rag.batch import BadBatch, BatchOptions, run_batch
from godot_rag.gdscript.chunk_text import ChunkTextError, check_chunk_text
from godot_rag.retrieve.engine.config import RetrieveConfig

GOOD = "func _ready():\n\tprint(\"hello\")\n"
# case -> (text, problem, status, words of the message)
BAD = {
    "empty": ("  \n\t", "empty", 422, "empty"),
    "too long": ("x" * 20_001, "too_long", 413, "the limit is 20000"),
    "NUL": ("func f():\n\tpr\x00int(1)", "nul", 422, "NUL byte at line 2, column 4"),
    "lone high surrogate": ('print("\ud800")', "not_utf8", 422, "U+D800 (a lone surrogate) at line 1, column 8"),
    "lone low surrogate": ('func f():\n\tvar s = "\udcff"', "not_utf8", 422, "U+DCFF (a lone surrogate) at line 2, column 11"),
}
# E needs an LLM; with llm_optional it runs as D here, so every strategy runs in the tests.
STRATEGIES = {"A": {}, "B": {}, "C": {}, "D": {}, "E": {"llm_optional": True}, "F": {}}


@pytest.fixture(scope="module")
def client(retriever):
    return TestClient(create_app(retriever, warm=False))


@pytest.mark.parametrize("case", BAD)
def test_one_message_per_problem(case):
    text, problem, status, words = BAD[case]
    with pytest.raises(ChunkTextError) as e:
        check_chunk_text(text)
    assert e.value.problem == problem and e.value.status == status and words in str(e.value)
    assert isinstance(e.value, ValueError)


def test_good_text_passes_unchanged_and_non_text_is_refused():
    odd = "# \U0001F600 \u2028 \ufffe caf\u00e9\nfunc f():\n\tpass"  # all of it UTF-8 can encode
    assert check_chunk_text(odd) is odd
    for value in (5, None, ["func f(): pass"], {"a": 1}):
        with pytest.raises(ChunkTextError, match="chunkText must be a string") as e:
            check_chunk_text(value)
        assert e.value.status == 422


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_library_refuses_bad_text_before_any_stage(retriever, strategy):
    for case, (text, _problem, status, words) in BAD.items():
        with pytest.raises(ChunkTextError) as e:
            retriever.retrieve(text, strategy, RetrieveConfig(**STRATEGIES[strategy]))
        assert e.value.status == status and words in str(e.value), case


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_http_bad_text_is_4xx_for_every_strategy(client, strategy):
    for case, (text, _problem, status, words) in BAD.items():
        # json.dumps writes a lone surrogate as the escape "\ud800", as a client's JSON would
        body = json.dumps({"chunkText": text, "strategy": strategy, "config": STRATEGIES[strategy]})
        r = client.post("/api/retrieve", content=body, headers={"content-type": "application/json"})
        assert r.status_code == status, (case, r.status_code, r.text[:300])
        assert words in r.json()["error"], case
    r = client.post("/api/retrieve", json={"chunkText": 5, "strategy": strategy})
    assert r.status_code == 422 and "chunkText" in r.json()["error"]
    odd = "# \U0001F600 \u2028 caf\u00e9\nfunc _ready():\n\tprint(\"\u00e9\")\n"
    r = client.post("/api/retrieve", json={"chunkText": odd, "strategy": strategy, "config": STRATEGIES[strategy]})
    assert r.status_code == 200 and r.json()["chunk_text"] == odd


def test_http_errors_quoting_a_lone_surrogate_are_4xx(client):
    """An error that names the client's input (a setting, a table) is written even when that input
    holds text UTF-8 cannot encode."""
    for body in ({"chunkText": GOOD, "strategy": "\ud800"}, {"chunkText": GOOD, "tables": ["\ud800"]},
                 {"chunkText": GOOD, "config": {"\ud800": 1}}, {"chunkText": GOOD, "\ud800": 1},
                 {"chunkText": GOOD, "extends": "\ud800"}, {"chunkText": GOOD, "config": {"fusion": "\udcff"}}):
        r = client.post("/api/retrieve", content=json.dumps(body), headers={"content-type": "application/json"})
        assert 400 <= r.status_code < 500, (body, r.status_code, r.text[:200])
        assert r.json()["error"]


def _cli(args, data_dir, **kw):
    return subprocess.run([sys.executable, "-m", "godot_rag.cli", "retrieve", "--data-dir", str(data_dir), *args],
                          capture_output=True, timeout=300, **kw)


def one_line_error(r) -> str:
    err = r.stderr.decode(errors="replace")
    assert r.returncode != 0 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err[-800:]
    assert err.startswith("error: ")
    return err


def test_cli_bad_text_is_a_one_line_error(fixture_db, tmp_path):
    f = tmp_path / "chunk.gd"
    for case in ("empty", "too long", "NUL"):
        text, _, _, words = BAD[case]
        f.write_text(text)
        assert words in one_line_error(_cli([str(f)], fixture_db.data_dir)), case
    # A lone surrogate cannot be in a UTF-8 file: its bytes (ED A0 80) are not UTF-8, from a file or stdin
    f.write_bytes(b'print("\xed\xa0\x80")\n')
    assert "not a UTF-8 text file (byte 7)" in one_line_error(_cli([str(f)], fixture_db.data_dir))
    assert "not a UTF-8 text file" in one_line_error(_cli(["-"], fixture_db.data_dir, input=b'print("\xed\xa0\x80")\n'))


def batch_file(path):
    """Every kind of bad line between good ones: (file, the bad lines' numbers)."""
    lines = [json.dumps({"chunkText": GOOD}).encode(),                 # 1 good
             json.dumps({"chunkText": 5}).encode(),                    # 2 wrong type
             b"[]",                                                    # 3 not an object
             b"{oops",                                                 # 4 not JSON
             b'{"chunkText": "caf\xe9"}',                              # 5 not UTF-8
             json.dumps({"chunkText": BAD["NUL"][0]}).encode(),        # 6 NUL
             json.dumps({"chunkText": BAD["too long"][0]}).encode(),   # 7 too long
             json.dumps({"chunkText": BAD["lone high surrogate"][0]}).encode(),  # 8 lone surrogate
             json.dumps({"chunk": GOOD}).encode(),                     # 9 no chunkText
             b"",                                                      # (blank: skipped)
             json.dumps({"chunkText": "   "}).encode(),                # 11 empty
             json.dumps({"chunk_text": "func g():\n\treturn 1"}).encode()]  # 12 good
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path, [2, 3, 4, 5, 6, 7, 8, 9, 11]


def check_batch_output(lines: list[dict], bad: list[int]):
    assert len(lines) == 11  # one output line per input line that is not blank, in input order
    errors = [l for l in lines if "error" in l]
    assert [e["line"] for e in errors] == bad
    assert all(400 <= e["status"] < 500 for e in errors)
    by_line = {e["line"]: e for e in errors}
    assert "must be a JSON object" in by_line[3]["error"] and "malformed JSON" in by_line[4]["error"]
    assert "not UTF-8" in by_line[5]["error"] and "NUL" in by_line[6]["error"] and by_line[7]["status"] == 413
    assert "lone surrogate" in by_line[8]["error"] and "missing" in by_line[9]["error"]
    assert "must be a string" in by_line[2]["error"] and "empty" in by_line[11]["error"]
    assert lines[0]["chunk_text"] == GOOD and lines[-1]["chunk_text"] == "func g():\n\treturn 1"


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_batch_every_bad_line_gets_its_error_line_and_the_batch_goes_on(retriever, tmp_path, capsys, strategy):
    path, bad = batch_file(tmp_path / "batch.jsonl")
    summary = run_batch(retriever, path, strategy, RetrieveConfig(**STRATEGIES[strategy]),
                        BatchOptions(workers=1, quiet=True, fmt="result"))
    out = capsys.readouterr()
    check_batch_output([json.loads(l) for l in out.out.splitlines()], bad)
    assert summary["bad_lines"] == len(bad) and summary["chunks"] == 2 and summary["lines"] == 11
    assert json.loads(out.err.strip().splitlines()[-1])["batch_summary"]["bad_lines"] == len(bad)
    with pytest.raises(BadBatch) as e:
        run_batch(retriever, path, strategy, RetrieveConfig(**STRATEGIES[strategy]),
                  BatchOptions(workers=1, quiet=True, strict=True))
    assert all(f"batch.jsonl:{n}:" in str(e.value) for n in bad) and not capsys.readouterr().out


def test_cli_batch_two_workers_and_strict(fixture_db, tmp_path):
    path, bad = batch_file(tmp_path / "batch.jsonl")
    r = _cli(["--batch", str(path), "--strategy", "B", "--workers", "2", "--format", "result", "--quiet"], fixture_db.data_dir)
    assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr[-800:]
    check_batch_output([json.loads(l) for l in r.stdout.splitlines()], bad)
    assert json.loads(r.stderr.decode().strip().splitlines()[-1])["batch_summary"]["bad_lines"] == len(bad)
    piped = _cli(["--batch", "-", "--strategy", "B", "--workers", "2", "--format", "result", "--quiet"], fixture_db.data_dir,
                 input=path.read_bytes())  # stdin, read as it comes: the same lines, in the same order
    def lines(out):
        return [(o.get("error"), o.get("chunk_text")) for o in map(json.loads, out.splitlines())]
    assert piped.returncode == 0 and lines(piped.stdout) == lines(r.stdout)
    r = _cli(["--batch", str(path), "--strategy", "B", "--strict", "--quiet"], fixture_db.data_dir)
    err = one_line_error(r)
    assert not r.stdout and f"{len(bad)} bad line(s)" in err
    assert all(f"batch.jsonl:{n}:" in err for n in bad)


def test_batch_into_a_closed_pipe_stops_quietly(fixture_db, tmp_path):
    """`godot-rag retrieve --batch ... | head`: when the reader goes away the batch stops, with no error
    message and no traceback, as a pipeline's other tools do, and lets go of the database."""
    path = tmp_path / "many.jsonl"
    path.write_text("".join(json.dumps({"chunkText": f"func f{i}():\n\tvar t = get_node(\"Timer\")"}) + "\n"
                            for i in range(400)))
    proc = subprocess.Popen([sys.executable, "-m", "godot_rag.cli", "retrieve", "--data-dir", str(fixture_db.data_dir),
                             "--batch", str(path), "--strategy", "B", "--workers", "2", "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert json.loads(proc.stdout.readline())["chunk"] == 1
    proc.stdout.close()  # the reader goes away while the batch still has output to write
    try:
        err = proc.communicate(timeout=120)[1].decode()
    except subprocess.TimeoutExpired:  # the hang this test is for: workers killed mid-result once left it here
        proc.kill()
        raise AssertionError("the batch did not stop within 120 s of its reader going away") from None
    assert proc.returncode == 141, err[-800:]
    assert "error" not in err and "Traceback" not in err, err[-800:]
    import psutil  # no dead process (the batch's or its workers') is left holding the server

    assert all(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
               for p in json.loads((fixture_db.data_dir / ".handle_pids.json").read_text()))
