"""The command line as grep/ripgrep/jq users expect it, and the answer a person needs at 3 a.m.

One test (or a few) per promise: no command means scan, -V, -q, --color,
completion, plain help, the clean-scan note, ledger prose never cut inside a
sentence, caveats and superseded-by notes of each root in every output, the
re-queue line, folded repeats with their workers, launcher findings in the
headline, the runs table, stats by root faults, structured problems, where
the report went, and py.typed.
"""

from __future__ import annotations

import importlib.resources
import io
import json
import os
from pathlib import Path
import pty
import re
import subprocess
import sys
import tomllib

import pytest
from typer.testing import CliRunner

import sigclass
from sigclass.cli.app import app
from sigclass.mcp_tools import Config, Tools
from sigclass.outputs import colour, prose
from sigclass.outputs.runs_text import id_ranges

from conftest import FILES, OOM, REPO, sigclass_exe  # noqa: F401  (sigclass_exe is a fixture)

runner = CliRunner()
SWEEP = REPO / "examples" / "sweep-0412"
RUNS = FILES / "runs"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
CLEAN = "2026-03-01 12:00:00,000 INFO step 1 loss 2.3\n2026-03-01 12:00:01,000 INFO step 2 loss 2.2\n"


def _ledger(family: str) -> dict:
    return sigclass.explain(family).to_dict()


def _flat(text: str) -> str:
    """Text with its wrapping undone (and colour dropped), to look for whole sentences."""
    return " ".join(ANSI.sub("", text).split())


@pytest.fixture()
def logs(tmp_path: Path) -> dict[str, Path]:
    bad = tmp_path / "train.log"
    bad.write_text("INFO start\n" + OOM)
    clean = tmp_path / "clean.log"
    clean.write_text(CLEAN)
    return {"bad": bad, "clean": clean}


@pytest.fixture()
def superseded_run(tmp_path: Path) -> Path:
    """A run over two days whose root is vllm-engine-hang, a family the ledger says is superseded."""
    d = tmp_path / "hang"
    d.mkdir()
    (d / "gpu0.log").write_text(
        "2026-03-01T10:00:00.000Z INFO [shard 0] starting: 64 prompts\n"
        "2026-03-01T10:03:00.000Z INFO [shard 0] done in 180s\n"
        "2026-03-01T10:03:01.000Z INFO [shard 2] starting: 64 prompts\n"
        'ERROR 03-01 10:14:11 [core.py:640]   File "/x/vllm/v1/executor/multiproc_executor.py", line 243, in collective_rpc\n'
        'ERROR 03-01 10:14:11 [core.py:640]     raise TimeoutError(f"RPC call to {method} timed out.") from e\n'
        "ERROR 03-01 10:14:11 [core.py:640] TimeoutError: RPC call to execute_model timed out.\n")
    (d / "gpu1.log").write_text(
        "2026-03-01T10:00:00.000Z INFO [shard 1] starting: 64 prompts\n"
        "2026-03-01T10:03:00.000Z INFO [shard 1] done in 180s\n"
        "2026-03-02T00:03:01.000Z INFO [shard 3] starting: 64 prompts\n"
        "2026-03-02T00:04:01.000Z INFO [shard 3] done in 60s\n")
    return d


def _watchdog_log(path: Path) -> Path:
    rows = []
    for r in (0, 1, 2):
        rows.append(f"[rank{r}]:[E0611 02:14:5{r}.338172901 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught "
                    "collective operation timeout: WorkNCCL(SeqNum=18804, OpType=ALLGATHER, NumelIn=4194304, "
                    "NumelOut=33554432, Timeout(ms)=1800000) ran for 1800093 milliseconds before timing out.")
        rows.append(f"[rank{r}]:[I0611 02:14:5{r}.500000000 train.py:1] still here")
    path.write_text("\n".join(rows) + "\n")
    return path


# --------------------------------------------------------------------------- no command means scan


def test_scan_options_work_without_the_command_on_a_pipe(sigclass_exe, logs):
    res = subprocess.run([*sigclass_exe, "--format", "jsonl"], input=logs["bad"].read_bytes(), capture_output=True,
                         timeout=120)
    assert res.returncode == 1, res.stderr
    rows = [json.loads(ln) for ln in res.stdout.splitlines()]
    assert [r["family"] for r in rows if r.get("kind") != "verdict"] == ["cuda-oom"]
    assert rows[-1]["kind"] == "verdict" and rows[-1]["cause"]["family"] == "cuda-oom"


def test_a_file_without_the_command_is_scanned(logs):
    r = runner.invoke(app, [str(logs["bad"])])
    assert r.exit_code == 1, r.output
    assert "cuda-oom" in r.stdout
    r = runner.invoke(app, ["-f", "json", str(logs["clean"])])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["findings"] == []


def test_console_script_redirected_stdin_takes_scan_options(sigclass_exe, logs):
    with open(logs["bad"], "rb") as fh:
        res = subprocess.run([*sigclass_exe, "-f", "json"], stdin=fh, capture_output=True, timeout=120)
    assert res.returncode == 1, res.stderr
    assert json.loads(res.stdout)["findings"][0]["family"] == "cuda-oom"


def test_a_mistyped_command_is_not_read_as_a_file():
    r = runner.invoke(app, ["rnus"])
    assert r.exit_code == 2
    assert "did you mean `sigclass runs`" in r.output and "Traceback" not in r.output


# --------------------------------------------------------------------------- options


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag):
    r = runner.invoke(app, [flag])
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == f"sigclass {sigclass.__version__}"


def test_quiet_prints_nothing_and_the_status_tells(logs):
    r = runner.invoke(app, ["-q", str(logs["bad"])])
    assert (r.exit_code, r.stdout) == (1, "")
    r = runner.invoke(app, ["scan", "--quiet", str(logs["clean"])])
    assert (r.exit_code, r.stdout) == (0, "")
    r = runner.invoke(app, ["runs", "-q", "-j", "1", str(RUNS / "torchrun")])
    assert (r.exit_code, r.stdout) == (1, "")


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("when", "env", "tty", "want"), [
    ("auto", {}, True, True),
    ("auto", {}, False, False),
    ("auto", {"TERM": "dumb"}, True, False),
    ("auto", {"NO_COLOR": "1"}, True, False),
    ("auto", {"FORCE_COLOR": "1"}, False, True),
    ("always", {"NO_COLOR": "1", "TERM": "dumb"}, False, True),
    ("never", {"FORCE_COLOR": "1"}, True, False),
])
def test_colour_policy(monkeypatch, when, env, tty, want):
    for k in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert colour.wanted(_Tty() if tty else io.StringIO(), when) is want


def test_color_option_on_scan_and_runs(logs, monkeypatch):
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    r = runner.invoke(app, ["--color", "always", str(logs["bad"])])
    assert "\x1b[" in r.stdout
    monkeypatch.setenv("FORCE_COLOR", "1")
    r = runner.invoke(app, ["scan", "--color", "never", str(logs["bad"])])
    assert "cuda-oom" in r.stdout and "\x1b[" not in r.stdout
    r = runner.invoke(app, ["runs", "-j", "1", "--color", "always", str(RUNS / "torchrun")])
    assert "\x1b[" in r.stdout
    r = runner.invoke(app, ["runs", "-j", "1", "--color", "never", str(RUNS / "torchrun")])
    assert "\x1b[" not in r.stdout


def test_completion_script_and_completions(sigclass_exe):
    r = runner.invoke(app, ["completion", "bash"])
    assert r.exit_code == 0, r.output
    assert "_SIGCLASS_COMPLETE" in r.stdout and "complete" in r.stdout
    env = {**os.environ, "_SIGCLASS_COMPLETE": "complete_bash"}
    got = subprocess.run(sigclass_exe, env={**env, "COMP_WORDS": "sigclass ru", "COMP_CWORD": "1"},
                         capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert "runs" in got.stdout.split(), got.stderr
    got = subprocess.run(sigclass_exe, env={**env, "COMP_WORDS": "sigclass explain vllm-h1", "COMP_CWORD": "2"},
                         capture_output=True, text=True, timeout=120)
    assert got.stdout.split() == ["vllm-h100-prefix-cache-ima"], got.stderr


HELPS = [[], ["scan"], ["runs"], ["compare"], ["report"], ["stats"], ["explain"], ["ledger"], ["ledger", "lint"], ["suggest"],
         ["train"], ["eval"], ["schema"], ["mcp"], ["completion"]]


@pytest.mark.parametrize("args", HELPS, ids=lambda a: " ".join(a) or "root")
def test_help_has_no_type_noise_and_no_broken_words(args):
    r = runner.invoke(app, [*args, "--help"], terminal_width=64, env={"COLUMNS": "64"})
    assert r.exit_code == 0, r.output
    text = r.stdout
    for noise in ("<bool>", "<list[", "<str>", "<int>", "<path>", "<Path>", "…"):
        assert noise not in text, f"{noise!r} in help of {args}:\n{text}"
    assert not re.search(r"[a-z,]\.\.\.$", text, re.MULTILINE), f"a help line cut short:\n{text}"
    if args == ["runs"]:
        assert "dask.distributed" in text  # a long word wraps whole, never split


def test_root_help_says_no_command_means_standard_input():
    r = runner.invoke(app, ["--help"])
    flat = _flat(r.stdout)
    assert "With no command, sigclass scans the FILEs given, or standard input" in flat
    assert "[FILE]... | COMMAND" in flat


# --------------------------------------------------------------------------- a clean scan on a terminal


def test_clean_scan_on_a_terminal_says_so_on_stderr(sigclass_exe, logs):
    main, other = pty.openpty()
    try:
        res = subprocess.run([*sigclass_exe, str(logs["clean"])], stdout=subprocess.PIPE, stderr=other,
                             timeout=120, env={k: v for k, v in os.environ.items() if k != "SIGCLASS_DEBUG"})
        os.close(other)
        other = -1
        said = b""
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:
                break
            if not chunk:
                break
            said += chunk
    finally:
        if other >= 0:
            os.close(other)
        os.close(main)
    assert res.returncode == 0
    assert res.stdout == b""
    assert b"no failures found in 2 lines" in said


def test_clean_scan_into_a_pipe_stays_silent(sigclass_exe, logs):
    res = subprocess.run([*sigclass_exe, str(logs["clean"])], capture_output=True, timeout=120)
    assert (res.returncode, res.stdout, res.stderr) == (0, b"", b"")


# --------------------------------------------------------------------------- never cut mid-sentence


def test_scan_text_shows_the_ledger_prose_whole():
    r = runner.invoke(app, [str(SWEEP / "gpu2.log")], env={"COLUMNS": "70"})
    assert r.exit_code == 1, r.output
    flat = _flat(r.stdout)
    entry = _ledger("vllm-h100-prefix-cache-ima")
    for text in (entry["mitigation"], *entry["probes"], *entry["caveats"]):
        assert " ".join(text.split()) in flat
    # prose is wrapped; a quoted log line ('>') and a line naming the file (its path as given, any length) are not
    assert all(len(ln) <= 110 for ln in r.stdout.splitlines()
               if not ln.lstrip().startswith(">") and str(SWEEP) not in ln)


def test_runs_text_gives_whole_first_sentences_and_says_where_the_rest_is():
    r = runner.invoke(app, ["runs", "-j", "1", str(SWEEP)], env={"COLUMNS": "80"})
    assert r.exit_code == 1, r.output
    flat = _flat(r.stdout)
    entry = _ledger("vllm-h100-prefix-cache-ima")
    assert " ".join(entry["mitigation"].split()) in flat
    for text in (*entry["probes"][:2], *entry["caveats"]):
        first, _ = prose.first_sentence(text)
        assert first in flat, first
    assert "more: sigclass explain vllm-h100-prefix-cache-ima" in flat
    assert "…" not in r.stdout


def test_first_sentence_and_wrap_never_split_inside():
    first, more = prose.first_sentence("Run it on an A100 (same args). Then compare.")
    assert (first, more) == ("Run it on an A100 (same args).", True)
    text = "word " * 30 + "dask.distributed.scheduler.address"
    lines = prose.wrap(text, "    ", "do: ", cols=40)
    assert " ".join(" ".join(lines).split()) == "do: " + " ".join(text.split())
    assert any(ln.strip() == "dask.distributed.scheduler.address" or ln.endswith("dask.distributed.scheduler.address")
               for ln in lines)


def test_evidence_is_not_cut_before_what_the_probes_point_at():
    line = "ERROR " + "x" * 300 + " num_common_prefix_blocks=812 tail " + "y" * 300
    got = prose.clip_evidence(line, keep=prose.terms(["Check `num_common_prefix_blocks` in the log."]))
    assert "num_common_prefix_blocks=812" in got and got.endswith("chars)") and len(got) < len(line)
    assert prose.clip_evidence("short line", keep=["x"]) == "short line"
    plain = prose.clip_evidence("a " * 200)
    assert plain.endswith("chars)") and len(plain) < 230


# --------------------------------------------------------------------------- caveats and superseded-by of each root


def test_runs_json_roots_carry_caveats_and_superseded_by(superseded_run):
    r = runner.invoke(app, ["runs", "-f", "json", "-j", "1", str(SWEEP), str(superseded_run)])
    doc = json.loads(r.stdout)
    sweep, hang = doc["runs"]
    assert all(x["caveats"] == _ledger("vllm-h100-prefix-cache-ima")["caveats"] for x in sweep["roots"])
    root = hang["roots"][0]
    assert root["family"] == "vllm-engine-hang"
    assert root["superseded_by"] == _ledger("vllm-engine-hang")["superseded_by"]
    assert root["superseded_by"][0]["id"] == "tokenizer-reload-per-call"


def test_api_and_mcp_run_analysis_carry_caveats_and_superseded_by(superseded_run):
    got = sigclass.analyze_run(superseded_run, n_jobs=1)
    assert got.roots[0].caveats == tuple(_ledger("vllm-engine-hang")["caveats"])
    assert got.roots[0].superseded_by[0]["id"] == "tokenizer-reload-per-call"
    tools = Tools(Config(roots=[superseded_run.parent.resolve()]))
    out = tools.call("analyze_run", {"path": superseded_run.name})
    assert out["roots"][0]["caveats"] == list(got.roots[0].caveats)
    assert out["roots"][0]["superseded_by"] == [dict(s) for s in got.roots[0].superseded_by]


def test_runs_text_says_which_fix_to_try_first_and_why(superseded_run):
    r = runner.invoke(app, ["runs", "-j", "1", str(superseded_run)])
    flat = _flat(r.stdout)
    note = prose.first_sentence(_ledger("vllm-engine-hang")["superseded_by"][0]["note"])[0]
    assert f"try first: tokenizer-reload-per-call, before this family's fix: {note}" in flat
    assert "re-queue 1 shard (2) after applying tokenizer-reload-per-call's fix" in flat


# --------------------------------------------------------------------------- what to re-run


def test_sweep_says_which_35_shards_to_requeue_and_the_fix_first():
    r = runner.invoke(app, ["runs", "-j", "1", str(SWEEP)])
    after = r.stdout.split("\n  re-queue ", 1)[1]  # the line after the roots, wrapped at the terminal's width
    assert _flat(after) == ("35 shards (2-4, 6-12, 14-20, 22-28, 30-36, 38-41) after applying the "
                            "vllm-h100-prefix-cache-ima fix (its do: above)")
    assert id_ranges(["2", "3", "4", "6", "9", "10", "a"]) == "2-4, 6, 9, 10, a"


def test_a_distributed_job_is_rerun_whole():
    r = runner.invoke(app, ["runs", "-j", "1", str(RUNS / "torchrun")])
    assert "  re-run the job (4 ranks lost) after applying the nccl-error fix (its do: above)" in r.stdout.splitlines()


# --------------------------------------------------------------------------- folded repeats keep their workers


def test_folded_repeats_keep_their_workers(tmp_path):
    log = _watchdog_log(tmp_path / "combined.log")
    r = runner.invoke(app, [str(log)])
    assert "nccl-watchdog-timeout repeated ×3 on ranks 0, 1, 2 (lines 1, 3, 5)" in r.stdout
    doc = json.loads(runner.invoke(app, ["-f", "json", str(log)]).stdout)
    assert [(f["family"], f["count"], f["workers"]) for f in doc["findings"]] == [
        ("nccl-watchdog-timeout", 3, ["0", "1", "2"])]
    assert sigclass.classify(log).findings[0].workers == ("0", "1", "2")


# --------------------------------------------------------------------------- runs text


def test_launcher_findings_count_in_the_headline():
    r = runner.invoke(app, ["runs", "-j", "1", str(RUNS / "custom")])
    assert r.stdout.splitlines()[0] == "custom: the one shard ok, but 1 launcher failure (import-error)"
    got = sigclass.analyze_run(RUNS / "custom", n_jobs=1)
    assert "1 launcher failure (import-error)" in got.summary


def test_runs_text_labels_dates_and_total(superseded_run):
    r = runner.invoke(app, ["runs", "-j", "1", str(superseded_run), str(RUNS / "torchrun")])
    lines = r.stdout.splitlines()
    assert lines[1].split() == ["WORKER", "SHARD", "DATE", "TIME", "ROOT", "FAULT", "LOST"]
    assert lines[2].split()[:4] == ["gpu0", "2", "2026-03-01", "10:14:11"]  # the run spans two days
    assert ["WORKER", "RANK", "TIME", "ROOT", "FAULT", "LOST"] in [ln.split() for ln in lines]
    assert lines[-1] == "total: 2 runs, 5/8 units lost, 2 root faults"
    one = runner.invoke(app, ["runs", "-j", "1", str(RUNS / "torchrun")]).stdout.splitlines()
    assert not any(ln.startswith("total:") for ln in one)  # one run: its headline is the total


# --------------------------------------------------------------------------- stats


def test_stats_ranks_root_families_above_cascade_families(tmp_path):
    import polars as pl

    from sigclass.outputs import history as hs
    from sigclass.outputs.tables import UNITS_SCHEMA

    cols = ["unit", "worker", "status", "family", "role", "root", "fingerprint"]
    rows = [("0", "gpu0", "failed", "cuda-oom", "root", None, "fa")]
    rows += [(str(i), "gpu0", "failed", "vllm-engine-dead", "cascade", "0", "fb") for i in range(1, 5)]
    data = [dict(zip(cols, r)) | {"run": "r", "source": "gpu0.log", "line": 1, "evidence": None, "time": None}
            for r in rows]
    hs.append_units(tmp_path / "h", pl.DataFrame(data, schema=UNITS_SCHEMA))
    r = runner.invoke(app, ["stats", "-f", "json", str(tmp_path / "h")])
    assert r.exit_code == 0, r.output
    fams = json.loads(r.stdout)["families"]
    assert [(f["family"], f["roots"], f["units"]) for f in fams] == [("cuda-oom", 1, 1), ("vllm-engine-dead", 0, 4)]
    top = json.loads(r.stdout)["top_fingerprints"]
    assert top[0]["family"] == "cuda-oom"


# --------------------------------------------------------------------------- problems are records


def test_problems_are_records_in_every_output(tmp_path):
    binary = tmp_path / "run" / "gpu0.log"
    binary.parent.mkdir()
    binary.write_bytes(b"\x00\x01\x02" * 4000)
    (tmp_path / "run" / "gpu1.log").write_text("INFO [shard 1] starting\n" + OOM)
    want = {"path": "gpu0.log", "kind": "binary"}

    scan = json.loads(runner.invoke(app, ["-f", "json", str(binary)]).stdout)
    assert [(p["path"], p["kind"]) for p in scan["problems"]] == [(str(binary), "binary")]
    assert all(set(p) == {"path", "kind", "message"} for p in scan["problems"])

    run = json.loads(runner.invoke(app, ["runs", "-f", "json", "-j", "1", str(tmp_path / "run")]).stdout)["runs"][0]
    assert {k: run["problems"][0][k] for k in want} == want
    assert run["problems"][0]["message"].startswith("binary data")

    api_run = sigclass.analyze_run(tmp_path / "run", n_jobs=1)
    p = api_run.problems[0]
    assert (p.path, p.kind) == ("gpu0.log", "binary") and "binary" in p  # still the line people read
    assert api_run.to_dict()["problems"][0] == run["problems"][0]
    assert sigclass.RunAnalysis.from_dict(api_run.to_dict()).problems == api_run.problems

    res = sigclass.classify(binary)
    assert res.problems[0].kind == "binary" and res.to_dict()["problems"][0]["kind"] == "binary"

    mcp = Tools(Config(roots=[tmp_path.resolve()])).call("analyze_run", {"path": "run"})
    assert {k: mcp["problems"][0][k] for k in want} == want


# --------------------------------------------------------------------------- report and packaging


def test_report_without_out_says_where_it_wrote(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["report", "-j", "1", str(RUNS / "torchrun")])
    assert r.exit_code == 1, r.output
    where = tmp_path.resolve() / "report.html"
    assert where.exists()
    assert r.stdout.startswith(f"wrote {where}: 1 run(s)")


def test_package_is_typed():
    assert (importlib.resources.files("sigclass") / "py.typed").is_file()
    conf = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "py.typed" in conf["tool"]["setuptools"]["package-data"]["sigclass"]


def test_python_dash_m_takes_a_file_too(logs):
    res = subprocess.run([sys.executable, "-m", "sigclass", "-f", "jsonl", str(logs["bad"])], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 1, res.stderr
    assert json.loads(res.stdout.splitlines()[0])["family"] == "cuda-oom"


def test_mcp_text_that_names_a_file_is_classified_as_text_never_read(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    secret = tmp_path / "secret.log"  # outside the server's root
    secret.write_text(OOM)
    out = Tools(Config(roots=[root.resolve()])).call("classify_log", {"text": str(secret)})
    assert out["source"] == "<text>" and out["findings"] == []


@pytest.mark.parametrize(("line", "path", "kind"), [
    ("gpu3.log: binary data, not a text log; skipped", "gpu3.log", "binary"),
    ("a/b.log.gz: truncated gzip stream; read up to line 812", "a/b.log.gz", "corrupt"),
    ("worker-0.log: vanished before it could be read; skipped", "worker-0.log", "missing"),
    ("loop: symlink loop; skipped", "loop", "symlink-loop"),
    ("fifo: FIFO, not a regular file; not opened", "fifo", "not-a-file"),
    ("empty.log: empty file; nothing to read", "empty.log", "empty"),
    ("x.log: 2 line(s) longer than 64 KiB were cut to their first 64 KiB", "x.log", "long-lines"),
    ("no log files (*.log, *.out) in this directory", None, "no-logs"),
    ("secret.log: cannot read (permission denied); skipped", "secret.log", "unreadable"),
])
def test_problem_lines_split_into_path_kind_and_message(line, path, kind):
    from sigclass.problems import ProblemLine

    p = ProblemLine(line)
    assert (p.path, p.kind) == (path, kind)
    assert p.message == (line[len(path) + 2:] if path else line)
    assert p.to_dict() == {"path": path, "kind": kind, "message": p.message}
