"""What a new user meets first: every help text matches what the command does."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from sigclass.cli.app import app
from sigclass.mcp_tools import Config, Tools

from conftest import REPO, sigclass_exe  # noqa: F401  (sigclass_exe is a fixture)

runner = CliRunner()


def test_mcp_help_names_every_tool_the_server_serves(tmp_path):
    res = runner.invoke(app, ["mcp", "--help"], terminal_width=400)
    assert res.exit_code == 0, res.output
    served = [d["name"] for d in Tools(Config(roots=[tmp_path])).definitions()]
    assert len(served) == 5
    missing = [name for name in served if name not in res.output]
    assert not missing, f"`sigclass mcp --help` does not name {missing}"


def test_explain_jsonl_is_the_json_entry_on_one_line():
    as_json = runner.invoke(app, ["explain", "cuda-oom", "-f", "json"])
    as_jsonl = runner.invoke(app, ["explain", "cuda-oom", "-f", "jsonl"])
    assert as_json.exit_code == 0 and as_jsonl.exit_code == 0, as_json.output + as_jsonl.output
    lines = as_jsonl.output.splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0]) == json.loads(as_json.output)
    assert json.loads(lines[0])["id"] == "cuda-oom"


def _readme_transcripts() -> list[tuple[str, list[str]]]:
    """The README's shown sessions: each ``` block whose first line is `$ sigclass ...`, with its output lines."""
    out: list[tuple[str, list[str]]] = []
    block: list[str] | None = None
    for line in (REPO / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            if block is None:
                block = []
                continue
            if block and block[0].startswith("$ sigclass "):
                out.append((block[0][2:], block[1:]))
            block = None
        elif block is not None:
            block.append(line)
    return out


def _words(text: str) -> list[str]:
    return text.split()


def _find(words: list[str], seq: list[str], start: int) -> int:
    for i in range(start, len(words) - len(seq) + 1):
        if words[i:i + len(seq)] == seq:
            return i + len(seq)
    return -1


@pytest.mark.parametrize("command,shown", _readme_transcripts(), ids=lambda v: v if isinstance(v, str) else "")
def test_readme_transcripts_show_what_the_command_prints(command, shown, sigclass_exe):
    """Every line the README shows (but lines it elides with `...`) is printed by the command, in that order;
    where the terminal wraps does not matter."""
    res = subprocess.run([*sigclass_exe, *shlex.split(command)[1:]], cwd=REPO,
                         capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "100", "NO_COLOR": "1"})
    assert res.returncode == 1, res.stderr  # every example run has failures
    got = _words(res.stdout)
    pos = 0
    for line in shown:
        if "..." in line or not line.strip():
            continue
        found = _find(got, _words(line), pos)
        assert found != -1, f"README shows {line.strip()!r} after `{command}`, which does not print it there"
        pos = found


def test_extra_corpus_without_the_shipped_one_says_so(monkeypatch, tmp_path, capsys):
    """An installed wheel has no corpus: `train --corpus mine/` trains on mine/ alone, and says so."""
    from sigclass.cli import learn
    from sigclass.learn import corpus

    monkeypatch.setattr(corpus, "shipped_corpus", lambda: None)
    assert learn._dirs([tmp_path], no_shipped=False) == [tmp_path]
    said = capsys.readouterr().err
    assert "no shipped corpus in this installation" in said and "only the --corpus folders" in said
    assert learn._dirs([tmp_path], no_shipped=True) == [tmp_path]
    assert capsys.readouterr().err == ""  # asked for: nothing to say


def test_eval_without_any_corpus_says_how_to_get_one(monkeypatch):
    from sigclass.learn import corpus

    monkeypatch.setattr(corpus, "shipped_corpus", lambda: None)
    res = runner.invoke(app, ["eval"])
    assert res.exit_code == 2
    assert "pip install -e" in res.output and "--corpus DIR" in res.output
    assert "Traceback" not in res.output


def test_lint_of_a_path_with_no_signature_file_is_not_clean(tmp_path):
    (tmp_path / "empty").mkdir()
    for arg, said in ((tmp_path / "missing.yaml", "no such file or folder"),
                      (tmp_path / "empty", "no signature files")):
        res = runner.invoke(app, ["ledger", "lint", str(arg)])
        assert res.exit_code == 1, res.output
        assert f"severity=HIGH signature={arg} {said}" in res.output


def _comparison(differences: int) -> dict:
    return {"runs": [f"r{i}" for i in range(differences + 1)], "units": 0, "discriminating": [], "probes": [],
            "verdicts": [], "problems": [],
            "not_comparable": [{"fact": "model", "values": ["a", f"b{i}"], "runs": ["r0", f"r{i + 1}"]}
                               for i in range(differences)]}


def test_report_folds_a_long_not_comparable_list_and_shows_a_short_one():
    """A report of many unrelated runs has one difference per pair of runs: folded, the runs stay near the top."""
    from sigclass.outputs.report.html import render

    long_page = render([], comparison=_comparison(40))
    folded = re.search(r'<details class="not-comparable"( open)?><summary>[^<]*\(40 difference', long_page)
    assert folded and folded.group(1) is None, "a long list is shown unfolded"
    assert long_page.count('<li class="not-comparable" data-fact="model">') == 40
    short_page = render([], comparison=_comparison(2))
    assert '<details class="not-comparable" open><summary>' in short_page


def test_ledger_render_to_a_folder_is_one_line_not_an_internal_error(tmp_path):
    res = runner.invoke(app, ["ledger", "render", "-o", str(tmp_path)])
    assert res.exit_code == 2
    assert res.output.strip() == f"sigclass: {tmp_path}: cannot write (Is a directory); name a file in a writable folder"


def test_output_folders_that_cannot_be_made_are_one_line(tmp_path):
    """--history and suggest's --out name folders; a file in the way is one line naming it, not an internal error."""
    blocker = tmp_path / "a-file"
    blocker.write_text("x\n")
    run = REPO / "examples" / "sweep-0412"
    res = runner.invoke(app, ["runs", "-j", "1", "-q", "--history", str(blocker / "sub"), str(run)])
    assert res.exit_code == 2
    assert f"{blocker / 'sub'}: cannot make the history folder" in res.output and "internal error" not in res.output
    logs = tmp_path / "logs"
    logs.mkdir()
    for i in range(2):  # two members of one unknown group make a draft
        (logs / f"w{i}.log").write_text('Traceback (most recent call last):\n  File "x.py", line 3, in <module>\n'
                                        f"FrobnicatorError: the frobnicator {i} ran dry\n")
    res = runner.invoke(app, ["suggest", str(logs), "--out", str(blocker)])
    assert res.exit_code == 2, res.output
    assert f"{blocker}: cannot make the drafts folder" in res.output and "internal error" not in res.output


def test_a_log_that_starts_with_a_hole_of_nul_bytes_is_still_read(tmp_path):
    """logrotate's copytruncate empties a log while its writer keeps its offset: the file then starts with a
    hole of NUL bytes (here longer than a read block) before the new lines. Those lines are read, not skipped
    as binary; a file of NUL bytes alone is still binary."""
    from conftest import OOM

    log = tmp_path / "train.log"
    with open(log, "wb") as fh:
        fh.write(b"\x00" * (9 << 20))
        fh.write(OOM.encode())
    res = runner.invoke(app, ["scan", "-f", "jsonl", str(log)])
    assert res.exit_code == 1, res.output
    assert "cuda-oom" in [json.loads(ln).get("family") for ln in res.stdout.splitlines() if ln.startswith("{")]
    assert f"{log}: starts with {9 << 20} NUL bytes" in res.output
    zeros = tmp_path / "zeros.log"
    zeros.write_bytes(b"\x00" * 5000)
    res = runner.invoke(app, ["scan", str(zeros)])
    assert res.exit_code == 2
    assert f"{zeros}: binary data" in res.output


@pytest.mark.parametrize("name", ["renamed.log.gz", "renamed.log.zst"])
def test_a_plain_log_named_as_compressed_is_read_as_the_text_it_is(tmp_path, name):
    from conftest import OOM

    log = tmp_path / name
    log.write_text(OOM)
    res = runner.invoke(app, ["scan", "-f", "jsonl", str(log)])
    assert res.exit_code == 1, res.output
    assert json.loads(res.stdout.splitlines()[0])["family"] == "cuda-oom"


def test_the_command_line_under_test_is_this_environments_console_script(sigclass_exe):
    """scripts/test.sh and CI run pytest without activating the virtualenv: PATH then has no `sigclass`, or
    another one. The tests run the console script installed beside this Python (shell completion, for one,
    only answers to the script's own name, not to `python -m sigclass`)."""
    import sigclass

    assert sigclass_exe[0] != sys.executable, "the tests fell back to `python -m sigclass`"
    res = subprocess.run([*sigclass_exe, "-V"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PATH": os.defpath})
    assert res.stdout.strip() == f"sigclass {sigclass.__version__}"


def test_binary_data_that_starts_with_nul_bytes_is_one_binary_problem(tmp_path):
    blob = tmp_path / "blob.log"
    blob.write_bytes(b"\x00" * 100 + b"\x00\x01\x02" * 4000)
    res = runner.invoke(app, ["-f", "json", str(blob)])
    assert res.exit_code == 2
    assert [p["kind"] for p in json.loads(res.stdout)["problems"]] == ["binary"]


def test_compare_reads_runs_as_runs_does_with_the_same_layout_and_model_options(tmp_path):
    """A run that needs --unit-pattern / --worker-pattern for `runs`, or a model of one's own, needs them for
    `compare` too (they were runs' and report's only)."""
    from conftest import OOM

    run = tmp_path / "odd"
    for host in ("host-a", "host-b"):
        for task in (1, 2):
            d = run / host
            d.mkdir(parents=True, exist_ok=True)
            (d / f"task{task}.log").write_text(f"INFO task {task} begins\n" + (OOM if host == "host-a" else "INFO ok\n"))
    pats = ["--unit-pattern", r"task(\d+)", "--worker-pattern", r"^(host-\w+)/"]
    runs = runner.invoke(app, ["runs", "-j", "1", "-f", "json", *pats, str(run)])
    cmp = runner.invoke(app, ["compare", "-j", "1", "-f", "json", *pats, str(run)])
    assert cmp.exit_code == runs.exit_code == 1, cmp.output
    units = json.loads(runs.stdout)["runs"][0]["units"]
    assert sorted({u["worker"] for u in units}) == ["host-a", "host-b"]
    assert json.loads(cmp.stdout)["units"] == len(units)
    bad = runner.invoke(app, ["compare", "--unit-pattern", "task(", str(run)])
    assert bad.exit_code == 2 and "not a valid regular expression" in bad.output
    missing = tmp_path / "none.joblib"
    res = runner.invoke(app, ["compare", "-j", "1", "--model", str(missing), str(run)])
    assert res.exit_code == 2 and str(missing) in res.output and "Traceback" not in res.output


def test_train_refuses_an_unwritable_model_path_before_training(tmp_path, monkeypatch):
    """The check comes before minutes of training: training itself is never reached."""
    import sigclass.learn.train as learn_train

    def no_training(*a, **k):
        raise AssertionError("training started although the model file cannot be written")

    monkeypatch.setattr(learn_train, "train", no_training)
    blocker = tmp_path / "a-file"
    blocker.write_text("x\n")
    for target, said in ((tmp_path, "is a directory"), (blocker / "m.joblib", "cannot make the folder")):
        res = runner.invoke(app, ["train", "--out", str(target)])
        assert res.exit_code == 2, res.output
        assert said in res.output and "Traceback" not in res.output
