"""`sigclass suggest`: a new error that repeats across runs becomes a draft signature."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import regex
import yaml
from typer.testing import CliRunner

from sigclass.cli.app import app
from sigclass.authoring.suggest import induce, segments

from conftest import elastic_row, elastic_summary, REPO

runner = CliRunner()
CLEAN = REPO / "corpus" / "written" / "clean"


def _new_error(i: int) -> str:
    return (
        "Traceback (most recent call last):\n"
        f'  File "/opt/app/gen_{i}.py", line {80 + i}, in <module>\n'
        "    out = planner.plan(batch)\n"
        f'  File "/opt/venv/lib/python3.11/site-packages/flashinfer/prefill.py", line {500 + i}, in plan\n'
        "    raise RuntimeError(msg)\n"
        f"RuntimeError: FlashInfer plan failed: workspace buffer of {1 << (20 + i)} bytes is too small "
        f"for {i + 2} requests (need {3 << (20 + i)} bytes)\n"
    )


OOM = (
    "Traceback (most recent call last):\n"
    '  File "/app/train.py", line 42, in <module>\n'
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
)


@pytest.fixture()
def runs(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    n = 0
    for r in ("run-a", "run-b", "run-c"):
        for w in (0, 1):
            d = root / r / f"worker_{w}"
            d.mkdir(parents=True)
            n += 1
            text = f"INFO start worker {w}\n[shard {n}] starting\n" + _new_error(n) + f"[shard {n}] failed\n"
            (d / f"shard_{n}.log").write_text(text)
    (root / "run-c" / "worker_0" / "shard_99.log").write_text("INFO start\n" + OOM)
    (root / "run-b" / "worker_1" / "shard_98.log").write_text("INFO start\nINFO step 1 loss 2.0\n[shard 98] done\n")
    return root


def test_suggest_writes_a_draft_that_lints_and_matches_every_repeat(runs: Path, tmp_path: Path):
    out = tmp_path / "drafts"
    r = runner.invoke(app, ["suggest", str(runs), "--out", str(out), "-f", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    top = doc["groups"][0]
    assert top["count"] == 6 and top["runs"] == 3 and top["workers"] == 6
    written = [d for d in doc["drafts"] if d["written"]]
    assert len(written) == 1, doc["drafts"]
    draft = Path(written[0]["path"])
    assert draft.exists() and draft.with_suffix(".log").exists()

    lint = runner.invoke(app, ["ledger", "lint", str(out)])
    assert lint.exit_code == 0, lint.output
    assert "0 HIGH" in lint.output and "pattern-rule" not in lint.output

    spec = yaml.safe_load(draft.read_text())
    assert spec["id"] == draft.stem and spec["role"] == "root"
    (pattern,) = spec["match"]["any"]
    assert "\\b" not in pattern and "(?=" not in pattern and "(?<" not in pattern
    rx = regex.compile(pattern)
    repeats = [ln for f in runs.rglob("shard_*.log") for ln in f.read_text().splitlines() if "FlashInfer plan failed" in ln]
    assert len(repeats) == 6 and all(rx.search(ln) for ln in repeats)

    # every repeat is now classified by the draft, and nothing else is
    scan = runner.invoke(app, ["scan", "--signatures", "regex", "--ledger", str(out), "-f", "jsonl",
                               *map(str, sorted(runs.rglob("*.log")))])
    fams = [r["family"] for r in map(json.loads, (ln for ln in scan.output.splitlines() if ln.startswith("{")))
            if r.get("kind") != "verdict"]
    assert fams.count(spec["id"]) == 6 and "unknown" not in fams


@pytest.mark.skipif(not CLEAN.is_dir(), reason="no clean corpus in this tree")
def test_the_draft_matches_no_clean_corpus_log(runs: Path, tmp_path: Path):
    out = tmp_path / "drafts"
    r = runner.invoke(app, ["suggest", str(runs), "--out", str(out)])
    assert r.exit_code == 0, r.output
    (draft,) = out.glob("*.yaml")
    rx = regex.compile(yaml.safe_load(draft.read_text())["match"]["any"][0])
    for f in sorted(CLEAN.iterdir()):
        for i, ln in enumerate(f.read_text(errors="replace").splitlines(), 1):
            assert not rx.search(ln), f"{f}:{i} matches the draft"
    assert "# expect-not:" in draft.with_suffix(".log").read_text()


def test_induced_regex_escapes_literals_and_masks_tokens():
    lines = ["ValueError: bad shard 17 at /data/x.bin (0x7f3a)", "ValueError: bad shard 9 at /mnt/y.bin (0x1)"]
    pat = induce(lines)
    assert pat is not None
    assert "[0-9]+" in pat and "0x[0-9a-fA-F]+" in pat and "\\(" in pat
    assert all(regex.search(pat, ln) for ln in lines)
    assert not regex.search(pat, "ValueError: bad shard x at y")
    assert [k for k, _ in segments("a 12 /p/q 0xff")] == [None, "<NUM>", None, "<PATH>", None, "<HEX>"]


def test_suggest_with_nothing_unknown_says_so(tmp_path: Path):
    log = tmp_path / "ok.log"
    log.write_text("INFO fine\n" + OOM)
    r = runner.invoke(app, ["suggest", str(log), "--out", str(tmp_path / "d")])
    assert r.exit_code == 0 and "no unknown failures" in r.output


def test_role_and_id_guesses():
    from sigclass.authoring.suggest import draft_id, guess_role

    assert guess_role(["Traceback (most recent call last):", "RuntimeError: worker 3 received SIGTERM, exiting"]) == "secondary"
    assert guess_role(["ValueError: tokenizer vocab mismatch (32000 != 32001)"]) == "root"
    taken = {"new-tokenizer-vocab-mismatch"}
    assert draft_id("ValueError: tokenizer vocab mismatch (32000 != 32001)", taken) == "new-tokenizer-vocab-mismatch-2"


def test_a_single_failure_is_not_drafted(tmp_path: Path):
    log = tmp_path / "one.log"
    log.write_text("INFO start\n" + _new_error(1))
    r = runner.invoke(app, ["suggest", str(log), "--out", str(tmp_path / "d")])
    assert r.exit_code == 0 and "nothing to draft" in r.output
    assert not (tmp_path / "d").exists()


def test_sources_read_runs_and_workers_through_the_run_layouts(tmp_path: Path):
    """suggest sees the files `sigclass runs` sees, and names runs and workers by the same layout rules."""
    from sigclass.authoring.suggest import sources
    from sigclass.runs.discover import plan_run

    top = tmp_path / "sweep"
    for rel in ("run-a/worker_0/shard_1.log", "run-a/worker_1/shard_2.log.gz", "run-b/slurm-77_3.out",
                "run-b/notes.md", "run-c/gpu3.log", "run-c/extra/shard_4.log"):
        f = top / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("INFO x\n")
    got = {str(f.relative_to(top)): (Path(run).name, worker) for f, run, worker in sources([top])}
    assert set(got) == set(plan_run(str(top)).sources)
    assert got == {
        "run-a/worker_0/shard_1.log": ("run-a", "worker_0"),
        "run-a/worker_1/shard_2.log.gz": ("run-a", "worker_1"),
        "run-b/slurm-77_3.out": ("run-b", "3"),  # an array task is its own worker, as in `sigclass runs`
        "run-c/gpu3.log": ("run-c", "gpu3"),
        "run-c/extra/shard_4.log": ("run-c", None),
    }
    # one run directory given directly (worker folders at its top) stays one run
    one = {(Path(run).name, worker) for _, run, worker in sources([top / "run-a"])}
    assert one == {("run-a", "worker_0"), ("run-a", "worker_1")}
    single = sources([top / "run-b" / "slurm-77_3.out"])
    assert [(Path(r).name, w) for _, r, w in single] == [("run-b", "3")]


def test_the_template_is_the_exception_the_block_raised_not_its_header():
    from sigclass.authoring.template import exception_key

    def tb(frames: str, exc: str) -> list[str]:
        return ["Traceback (most recent call last):", *frames.splitlines(), exc]

    a = tb('  File "/app/a.py", line 3, in f\n    assert args.batch_size % n == 0', "AssertionError")
    b = tb('  File "/app/b.py", line 9, in g\n    assert x.shape == y.shape', "AssertionError")
    ka, kb = exception_key(a), exception_key(b)
    assert ka[0] == "AssertionError" and ka[1] != kb[1]  # a bare exception keeps the statement that raised it
    assert ka[1] == "AssertionError | assert args.batch_size % n == <NUM>"
    # a chained traceback: the last exception line of the chain, with its message masked; log headers dropped
    chained = ["[rank1]: Traceback (most recent call last):", "[rank1]: KeyError: 'k_norm'", "",
               "[rank1]: The above exception was the direct cause of the following exception:", "",
               "[rank1]: ValueError: expected sequence of length 27 at dim 1 (got 26)"]
    assert exception_key(chained) == ("ValueError: expected sequence of length 27 at dim 1 (got 26)",
                                      "ValueError: expected sequence of length <NUM> at dim <NUM> (got <NUM>)")
    # torchelastic's summary says which exit code; its launcher frames are the same for every failure
    summary = ['  File "/usr/lib/torch/distributed/launcher/api.py", line 245, in launch_agent',
               "    raise ChildFailedError(", "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
               "====", "train.py FAILED", "[1]:", "  exitcode  : -9 (pid: 239)"]
    assert exception_key(summary)[1].endswith("ChildFailedError: | exitcode : -9")  # the code as printed: a kill
    assert exception_key(["Traceback (most recent call last):", '  File "/a.py", line 1, in f']) is None


def test_unknowns_that_raise_the_same_exception_group_together_whatever_their_header(tmp_path: Path):
    from sigclass.authoring.suggest import group_unknowns
    from sigclass.ledger.pack import load_ledger

    msg = "ValueError: Total number of attention heads ({}) must be divisible by tensor parallel size ({})."
    (tmp_path / "a.log").write_text("Traceback (most recent call last):\n  File \"/x/a.py\", line 1, in main\n"
                                    "    run()\n" + msg.format(32, 3) + "\n")
    (tmp_path / "b.log").write_text("ERROR 12-01 10:00:00 engine.py:12] Traceback (most recent call last):\n"
                                    "ERROR 12-01 10:00:00 engine.py:12]   File \"/y/b.py\", line 7, in start\n"
                                    "ERROR 12-01 10:00:00 engine.py:12]     go()\n"
                                    "ERROR 12-01 10:00:00 engine.py:12] " + msg.format(40, 6) + "\n")
    (tmp_path / "c.log").write_text("Traceback (most recent call last):\n  File \"/x/a.py\", line 1, in main\n"
                                    "    run()\nValueError: expected sequence of length 3 at dim 1 (got 2)\n")
    groups = group_unknowns([tmp_path / n for n in ("a.log", "b.log", "c.log")], load_ledger())
    assert sorted(g.count for g in groups) == [1, 2]
    big = max(groups, key=lambda g: g.count)
    assert big.template.startswith("ValueError: Total number of attention heads (<NUM>)")
    assert {m.key_line for m in big.members} == {msg.format(32, 3), msg.format(40, 6)}


CHILD_FAILED = ('  File "/usr/lib/torch/distributed/launcher/api.py", line 245, in launch_agent\n'
                '    raise ChildFailedError(\n'
                + elastic_summary(elastic_row(0, 1, 239, "{code}", "To enable traceback see: "
                                              "https://pytorch.org/docs/stable/elastic/errors.html")))


def test_launcher_summaries_and_cut_tracebacks_join_the_failure_their_source_shows(tmp_path: Path):
    from sigclass.authoring.suggest import group_unknowns
    from sigclass.ledger.pack import load_ledger

    own = "[rank1]: Traceback (most recent call last):\n[rank1]:   File \"/x/t.py\", line 3, in main\n" \
          "[rank1]:     n = total // steps\n[rank1]: ZeroDivisionError: integer division or modulo by zero\n"
    cut = "[rank2]: Traceback (most recent call last):\n"
    (tmp_path / "a.log").write_text(own + cut + "\n" + CHILD_FAILED.format(code=1))
    (tmp_path / "b.log").write_text(CHILD_FAILED.format(code=1))
    (tmp_path / "c.log").write_text(CHILD_FAILED.format(code=-6))
    groups = group_unknowns([tmp_path / n for n in ("a.log", "b.log", "c.log")], load_ledger())
    by_file = {}
    for g in groups:
        for m in g.members:
            by_file.setdefault(Path(m.source).name, set()).add(g.template)
    # a.log's cut traceback and its summary are the ZeroDivisionError's; b's summary alone is a group of its own,
    # and c's (a SIGABRT, exit code -6) is not b's (exit code 1)
    assert by_file["a.log"] == {"ZeroDivisionError: integer division or modulo by zero"}
    assert by_file["b.log"] == {"torch.distributed.elastic.multiprocessing.errors.ChildFailedError: | exitcode : 1"}
    assert by_file["c.log"] == {"torch.distributed.elastic.multiprocessing.errors.ChildFailedError: | exitcode : -6"}
    assert sorted(g.count for g in groups) == [1, 1, 3]


def test_a_fault_line_of_its_own_keeps_its_group_beside_the_sources_exception(tmp_path: Path):
    from sigclass.authoring.suggest import group_unknowns
    from sigclass.ledger.pack import load_ledger

    own = "Traceback (most recent call last):\n  File \"/x/t.py\", line 3, in main\n    n = total // steps\n" \
          "ZeroDivisionError: integer division or modulo by zero\n"
    (tmp_path / "a.log").write_text("Failed: Cuda error /w/custom_all_reduce.cuh:164 'invalid argument'\n\n" + own)
    groups = group_unknowns([tmp_path / "a.log"], load_ledger())
    assert sorted(g.count for g in groups) == [1, 1]
    assert any("ZeroDivisionError" in g.template for g in groups)
    assert any(g.template.startswith("Failed: Cuda error") for g in groups)


def test_torchelastic_s_failed_line_groups_by_its_exit_code_whatever_its_header(tmp_path: Path):
    from sigclass.authoring.suggest import group_unknowns
    from sigclass.ledger.pack import load_ledger

    glog = ("E1006 18:04:10.454885 1264 torch/distributed/elastic/multiprocessing/api.py:826] failed (exitcode: {c}) "
            "local_rank: {r} (pid: {p}) of binary: /opt/conda/bin/python\n")
    logging = "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: {c}) local_rank: {r} (pid: {p}) of binary: /usr/bin/python3\n"
    (tmp_path / "a.log").write_text(glog.format(c=1, r=5, p=119))
    (tmp_path / "b.log").write_text(logging.format(c=1, r=2, p=5939))
    (tmp_path / "c.log").write_text(logging.format(c=-6, r=0, p=142437))
    own = "[rank1]: Traceback (most recent call last):\n[rank1]:   File \"/x/t.py\", line 3, in main\n" \
          "[rank1]:     n = total // steps\n[rank1]: ZeroDivisionError: integer division or modulo by zero\n"
    (tmp_path / "d.log").write_text(own + glog.format(c=1, r=1, p=77))
    groups = group_unknowns([tmp_path / n for n in ("a.log", "b.log", "c.log", "d.log")], load_ledger())
    by_file: dict[str, set[str]] = {}
    for g in groups:
        for m in g.members:
            by_file.setdefault(Path(m.source).name, set()).add(g.template)
    assert by_file["a.log"] == by_file["b.log"] == {"failed (exitcode: 1) local_rank: <NUM>"}
    assert by_file["c.log"] == {"failed (exitcode: -6) local_rank: <NUM>"}
    assert by_file["d.log"] == {"ZeroDivisionError: integer division or modulo by zero"}  # the report joins its cause
    key = next(m.key_line for g in groups for m in g.members if Path(m.source).name == "a.log")
    assert key.startswith("failed (exitcode: 1) local_rank: 5")  # the header left out: a draft's regex reads the words
