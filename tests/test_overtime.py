"""Signatures over time (ledger `over_time` rules) and the verdicts over a whole source."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import regex
from typer.testing import CliRunner

import sigclass
from sigclass.cli.app import app
from sigclass.errors import SignatureError
from sigclass.ledger.pack import load_ledger
from sigclass.ledger.parse import parse_signature
from sigclass.mcp_tools import Config, Tools
from sigclass.scan.scanner import Scanner

runner = CliRunner()


class _Piped:
    def __init__(self, p: subprocess.CompletedProcess) -> None:
        self.exit_code, self.output = p.returncode, p.stdout.decode()


def _pipe(args: list[str], text: str) -> _Piped:
    """sigclass reading a real pipe, as `... | sigclass scan`."""
    return _Piped(subprocess.run([sys.executable, "-m", "sigclass", "scan", *args], input=text.encode(),
                                 capture_output=True, timeout=120))

HEAD = "id: my-fam\ntitle: t\nrole: root\nmatch:\n  any: ['some literal text']\nmitigation: m\n"


def _sig(rules: str):
    return parse_signature(HEAD + "over_time:\n" + rules, "my-fam.yaml")


@pytest.mark.parametrize("rules, message", [
    ("  - kind: trend\n    pattern: 'loss: (?P<value>.*)'\n", "kind must be one of"),
    ("  - kind: metric\n    pattern: 'grad norm: ([0-9.]+)'\n    when: nan\n", "needs a (?P<value>...) group"),
    ("  - kind: metric\n    pattern: 'grad norm: (?P<value>[0-9.]+)'\n    when: sometimes\n", "when must be one of"),
    ("  - kind: metric\n    pattern: 'grad norm: (?P<value>[0-9.]+)'\n    when: at_most\n", "needs a numeric limit"),
    ("  - kind: storm\n    pattern: 'Skipping step'\n    min_count: 0\n", "min_count must be an integer >= 1"),
    ("  - kind: stall\n    progress: 'iteration [0-9]+'\n", "needs alive"),
    ("  - kind: rate\n    pattern: 'loading file x'\n    per: 'got prompt'\n    speed: 3\n", "unknown key 'speed'"),
    ("  kind: metric\n", "must be a list of rules"),
    ("  - kind: storm\n    pattern: 'reducing to (?P<value>[0-9.]+)'\n    min_count: 5\n    when: nan\n",
     "a storm's when is at_most, at_least or fallen"),
    ("  - kind: storm\n    pattern: 'Skipping step'\n    min_count: 5\n    step: 'iteration (?P<value>[0-9]+)'\n",
     "step (the step lines to read) and min_step"),
    ("  - kind: storm\n    pattern: 'Skipping step'\n    min_count: 5\n    step: 'iteration ([0-9]+)'\n"
     "    min_step: 1000\n", "needs a (?P<value>...) group"),
    ("  - kind: storm\n    pattern: 'Skipping step'\n    min_count: 5\n    step: 'iteration (?P<value>[0-9]+)'\n"
     "    min_step: -1\n", "min_step must be a positive number"),
])
def test_bad_over_time_rules_name_the_file_line_and_the_fix(rules, message):
    with pytest.raises(SignatureError) as exc:
        _sig(rules)
    assert message in str(exc.value)
    assert str(exc.value).startswith("my-fam.yaml:")


def test_a_metric_needs_its_consecutive_steps(scanner):
    one = "{'loss': 1.2, 'grad_norm': 0.5}\n{'loss': 1.1, 'grad_norm': nan}\n{'loss': 1.0, 'grad_norm': 0.4}\n"
    assert not scanner.scan_text(one).findings  # one NaN grad norm, then finite again: no divergence
    two = one + "{'loss': 1.0, 'grad_norm': nan}\n{'loss': 1.0, 'grad_norm': nan}\n"
    fs = scanner.scan_text(two).findings
    assert [f.family for f in fs] == ["nan-loss"]
    assert fs[0].facts["over_time_rule"] == "metric hf-grad-norm-nonfinite"
    assert fs[0].line == 4 and fs[0].lines == [4, 5]


def _zero_tps(hh: int, mm: int, n: int, running: int = 2) -> str:
    out = []
    for i in range(n):
        m = mm + i
        out.append(f"INFO 03-11 {hh:02d}:{m:02d}:00 [loggers.py:127] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
                   f"Avg generation throughput: {0.0 if running else 0.0} tokens/s, Running: {running} reqs, Waiting: 0 reqs\n")
    return "".join(out)


def _moving(hh: int, mm: int) -> str:
    return (f"INFO 03-11 {hh:02d}:{mm:02d}:00 [loggers.py:127] Engine 000: Avg prompt throughput: 90.0 tokens/s, "
            f"Avg generation throughput: 41.5 tokens/s, Running: 2 reqs, Waiting: 0 reqs\n")


RECURRING = _zero_tps(10, 0, 4) + _moving(10, 5) + _moving(11, 0) + _zero_tps(11, 30, 4)


def test_a_stall_that_comes_back_after_a_quiet_spell_is_a_second_finding(scanner):
    fs = scanner.scan_text(RECURRING).findings
    assert [f.family for f in fs] == ["vllm-engine-hang", "vllm-engine-hang"]
    assert fs[0].fingerprint != fs[1].fingerprint
    assert fs[1].time.startswith(f"{fs[1].time[:4]}-03-11T11:30")


@pytest.mark.parametrize("fmt", ["text", "json", "jsonl"])
def test_the_second_episode_shows_in_every_output_format(fmt):
    r = _pipe(["--signatures", "regex", "--format", fmt], RECURRING)
    assert r.exit_code == 1, r.output
    if fmt == "text":
        assert r.output.count("vllm-engine-hang  ") == 2
    elif fmt == "json":
        assert [f["family"] for f in json.loads(r.output)["findings"]] == ["vllm-engine-hang"] * 2
    else:
        rows = [json.loads(x) for x in r.output.splitlines()]
        assert [x["family"] for x in rows if x.get("kind") != "verdict"] == ["vllm-engine-hang"] * 2


# the ledger's own story: an engine that looks hung while the client reloads its tokenizer per prompt
STORY = "".join(
    [f'INFO:     10.0.0.4:5{i:04d} - "POST /v1/completions HTTP/1.1" 200 OK\n'
     f"loading file tokenizer.json from cache at /models/tok/tokenizer.json\n"
     f"loading file tokenizer_config.json from cache at /models/tok/tokenizer_config.json\n" for i in range(3)]
    + ["(EngineCore_DP0 pid=7802) INFO 05-02 14:20:12 [shm_broadcast.py:466] No available shared memory broadcast "
       "block found in 60 seconds. This typically happens when some processes are hanging.\n",
       "(EngineCore_DP0 pid=7802) INFO 05-02 14:21:12 [shm_broadcast.py:466] No available shared memory broadcast "
       "block found in 60 seconds. This typically happens when some processes are hanging.\n"]
    + [f"loading file tokenizer_config.json from cache at /models/tok/tokenizer_config.json\n" for _ in range(4)]
)


def _story_verdict(findings: list[dict]) -> None:
    roots = [f for f in findings if f["role"] != "secondary"]
    assert roots and roots[0]["family"] == "tokenizer-reload-per-call", findings
    hangs = [f for f in findings if f["family"] == "vllm-engine-hang"]
    assert hangs and all(f["role"] == "secondary" and f["root"]["family"] == "tokenizer-reload-per-call" for f in hangs)
    assert any("chunk" in c for f in hangs for c in f["caveats"])  # chunking the generate call was a red herring


def test_story_on_a_pipe():
    r = _pipe(["--signatures", "regex", "--format", "json"], STORY)
    assert r.exit_code == 1, r.output
    _story_verdict(json.loads(r.output)["findings"])


def test_story_in_text_says_which_is_the_symptom():
    r = _pipe(["--signatures", "regex"], STORY)
    assert "vllm-engine-hang is a symptom of tokenizer-reload-per-call" in r.output
    assert "1 root, 1 secondary" in r.output


def test_story_in_a_run_directory(tmp_path: Path):
    run = tmp_path / "sweep"
    (run / "gpu0").mkdir(parents=True)
    (run / "gpu0" / "shard_0.log").write_text(STORY)
    res = sigclass.analyze_run(run, signatures="regex")
    assert [u.family for u in res.units] == ["tokenizer-reload-per-call"]
    assert [r.family for r in res.roots] == ["tokenizer-reload-per-call"]


def test_story_through_the_mcp_tool(tmp_path: Path):
    tools = Tools(Config(roots=[tmp_path]))
    out = tools.classify_log({"text": STORY})
    _story_verdict(out["findings"])


RECOVERED = (
    "{'loss': 1.40, 'grad_norm': 0.9, 'epoch': 0.10}\n"
    "Traceback (most recent call last):\n"
    '  File "train.py", line 88, in save_sample\n'
    "    upload(path)\n"
    "ConnectionResetError: [Errno 104] Connection reset by peer\n"
    "{'loss': 1.38, 'grad_norm': 0.8, 'epoch': 0.11}\n"
    "{'loss': 1.37, 'grad_norm': 0.8, 'epoch': 0.12}\n"
)


def test_an_error_the_progress_outlives_is_recovered_and_not_a_failure():
    r = _pipe(["--signatures", "regex", "--format", "json"], RECOVERED)
    fs = json.loads(r.output)["findings"]
    assert fs and all(f["status"] == "recovered" for f in fs)
    assert r.exit_code == 0, r.output
    cut = RECOVERED.rsplit("{'loss'", 2)[0]  # the same error with no progress after it is a failure
    r = _pipe(["--signatures", "regex", "--format", "json"], cut)
    assert r.exit_code == 1 and json.loads(r.output)["findings"][0]["status"] != "recovered"


def test_learned_only_mode_runs_no_over_time_rule():
    sc = Scanner(load_ledger(), signatures="learned")
    assert not sc.over_time


def _shm(hh: int, mm: int) -> str:
    return (f"(EngineCore_DP0 pid=7802) INFO 05-02 {hh:02d}:{mm:02d}:12 [shm_broadcast.py:466] No available shared "
            "memory broadcast block found in 60 seconds.\n")


def test_counted_evidence_back_after_a_quiet_spell_is_a_second_finding(scanner):
    one = _shm(14, 20) + _shm(14, 21) + _shm(14, 22)
    fs = scanner.scan_text(one + _shm(14, 40) + _shm(14, 41)).findings
    assert len(fs) == 1 and fs[0].count == 5  # 18 minutes apart: the same stall
    fs = scanner.scan_text(one + _shm(15, 40) + _shm(15, 41)).findings
    assert [f.family for f in fs] == ["vllm-engine-hang"] * 2 and fs[0].fingerprint != fs[1].fingerprint
    assert fs[1].line == 4 and fs[0].count == 3


def test_live_pipe_reports_a_provisional_stall_while_the_pipe_is_open():
    p = subprocess.Popen([sys.executable, "-m", "sigclass", "scan", "--signatures", "regex", "--format", "jsonl",
                          "--stall", "1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for i in range(3):
            p.stdin.write(f"{{'loss': 1.{i}, 'grad_norm': 0.5, 'epoch': 0.{i}}}\n".encode())
        p.stdin.flush()
        line = p.stdout.readline()  # arrives once the progress has stopped, while stdin stays open
        f = json.loads(line)
        assert f["family"] == "vllm-engine-hang" and f["line"] == 3
        assert any(c.startswith("provisional") for c in f["caveats"])
        p.stdin.write(b"{'loss': 1.5, 'grad_norm': 0.5, 'epoch': 0.5}\n")  # progress resumes: nothing withdrawn
        p.stdin.close()
        p.wait(timeout=120)
        rest = [json.loads(x) for x in p.stdout.read().splitlines()]
        assert [x.get("kind") for x in rest] == ["verdict"]  # no other finding: only the log's verdict at its end
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_bad_stall_setting_is_one_clear_line():
    r = runner.invoke(app, ["scan", "--stall", "soon", "-"])
    assert r.exit_code == 2 and "--stall takes auto, off or a number of seconds" in r.output
    assert "Traceback" not in r.output


def test_a_traceback_back_after_a_quiet_spell_is_a_new_episode(scanner):
    def oom(hh: int) -> str:
        return (f"2026-04-12 {hh:02d}:00:00 ERROR step failed\nTraceback (most recent call last):\n"
                '  File "train.py", line 9, in <module>\n    step()\n'
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    fs = scanner.scan_text(oom(9) + oom(9)).findings
    assert len({f.fingerprint for f in fs}) == 1  # a repeat: folded with the first
    fs = scanner.scan_text(oom(9) + oom(11)).findings
    assert [f.family for f in fs] == ["cuda-oom", "cuda-oom"] and fs[0].fingerprint != fs[1].fingerprint


def test_a_recovered_error_does_not_fail_its_unit(tmp_path: Path):
    run = tmp_path / "sweep"
    (run / "gpu0").mkdir(parents=True)
    (run / "gpu0" / "shard_0.log").write_text(RECOVERED)
    (run / "gpu0" / "shard_1.log").write_text(RECOVERED.rsplit("{'loss'", 2)[0])
    units = {u.unit: u for u in sigclass.analyze_run(run, signatures="regex").units}
    assert units["0"].status != "failed" and units["1"].status == "failed"


@pytest.mark.parametrize("source, has", [
    (r"loss (?P<value>\S+)", True), (r"x(?<value>\d+)", True), (r"^(?P<value>1)", True),
    (r"\\(?P<value>1)", True),  # an escaped backslash, then the group
    (r"\(?P<value>", False),  # an escaped bracket: no group
    (r"(?P<val>\d)", False), (r"(?P<values>1)", False)])
def test_value_group_is_read_from_the_pattern_text(source, has):
    # the metric rule's check reads the pattern's text; it must agree with what the regex module compiles
    from sigclass.ledger.overtime import _VALUE_GROUP
    assert bool(_VALUE_GROUP.search(source)) is has
    try:
        compiled = regex.compile(source)
    except regex.error:
        assert not has
    else:
        assert ("value" in compiled.groupindex) is has



# an fp16 overflow storm that halves the loss scale to a 32nd of where it held, with the trainer's step lines around it
def _overflow_storm(step: int) -> str:
    out, scale = [], 262144.0
    for k in range(6):
        out.append(f" iteration {step + k:>8}/  300000 | lm loss: 2.31E+00 | loss scale: {scale:.1f} | grad norm: 1.2 |")
        out.append(f"[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {scale:.1f}, reducing to {scale / 2:.1f}")
        scale /= 2
    return "\n".join(out) + "\n"


def test_a_storm_fires_only_past_its_min_step_read_from_the_step_lines_above_it(scanner):
    rule = "storm deepspeed-overflow-storm-mid-run"
    fired = lambda text: [f.facts.get("over_time_rule") for f in scanner.scan_text(text).findings]  # noqa: E731
    assert rule in fired(_overflow_storm(40000))
    assert rule not in fired(_overflow_storm(12))  # the first steps: fp16 calibrating its scale
    no_steps = "".join(x + "\n" for x in _overflow_storm(40000).splitlines() if "iteration" not in x)
    assert rule not in fired(no_steps)  # no step line says how far the run is: it may be the warm-up
    # a step line of another rank does not say how far this rank is
    other = _overflow_storm(40000).replace(" iteration", "[rank1]: iteration").replace("[deepspeed]", "[rank0]: [deepspeed]")
    assert rule not in fired(other)


def test_a_storm_that_does_not_fall_far_from_where_it_started_is_no_finding(scanner):
    # five overflows, each back where the run held (the scale raised and lowered again): no fall
    text = "".join(f" iteration {40000 + k:>8}/  300000 | lm loss: 2.31E+00 | loss scale: 131072.0 |\n"
                   f"[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 262144.0, reducing to 131072.0\n"
                   for k in range(8))
    assert not [f for f in scanner.scan_text(text).findings if f.family == "nan-loss"]


def test_fallen_is_at_or_under_a_factor_below_the_running_median():
    sig = _sig("  - kind: metric\n    pattern: 'scale: (?P<value>[0-9.]+)'\n    when: fallen\n    factor: 4\n")
    rule = sig.over_time[0]
    assert rule.met(1.0, [4.0, 4.0, 8.0]) and rule.met(0.5, [4.0])
    assert not rule.met(1.5, [4.0, 4.0]) and not rule.met(1.0, []) and not rule.met(float("nan"), [4.0])
