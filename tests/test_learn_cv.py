"""What the learned model reads, and how cross-validation splits the corpus and picks the abstain thresholds."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from sigclass.learn import evaluate
from sigclass.learn.blocktext import block_input, normalise_block, retry_pending
from sigclass.learn.corpus import CorpusFile, file_groups

# --------------------------------------------------------------------------- block text


def test_exit_codes_and_signal_numbers_are_kept_and_other_numbers_masked():
    text = normalise_block("ChildFailedError:\n  exitcode  : -9 (pid: 4242)\nprocess exited with exit code 137 after 12.5s")
    assert "exitcode_neg9" in text and "exitcode_137" in text
    assert "4242" not in text and "12.5" not in text
    other = normalise_block("ChildFailedError:\n  exitcode  : 1 (pid: 4242)")
    assert "exitcode_1" in other and "exitcode_neg9" not in other


def test_digits_of_a_name_stay():
    text = normalise_block("urllib3.exceptions.MaxRetryError: NVIDIA H100 sm_90 failed 3 times")
    assert "urllib3" in text and "H100" in text and "sm_90" in text
    assert " 3 " not in text


def test_log_headers_left_on_a_body_are_dropped_and_prefixed_frames_shortened():
    text = normalise_block(
        'ERROR 12-01 10:00:00 engine.py:123] Traceback (most recent call last):\n'
        'ERROR 12-01 10:00:00 engine.py:123]   File "/venv/lib/python3.11/site-packages/vllm/engine/core.py", line 9, in run\n'
        '(RayWorker pid=77, ip=10.0.0.2) ValueError: bad shape')
    assert "engine.py" not in text and "pid=" not in text
    assert "at vllm.engine.core in run" in text
    assert "exc_ValueError" in text


def test_exception_types_become_tokens_the_cause_first():
    text = normalise_block(
        "Traceback (most recent call last):\n"
        "KeyError: 'k_norm'\n"
        "\n"
        "The above exception was the direct cause of the following exception:\n"
        "\n"
        "Traceback (most recent call last):\n"
        "RuntimeError: Engine process failed to start")
    last = text.splitlines()[-1]
    assert last == "cause_KeyError exc_RuntimeError"
    assert "chained_exception" in text
    # the exception lines are repeated once for weight
    assert text.count("KeyError: 'k_norm'") == 2
    assert "exc_" not in normalise_block("just a line of text")


# --------------------------------------------------------------------------- folds grouped by thread


def _write_index(root: Path, rows: list[dict]) -> list[tuple[Path, str]]:
    files = []
    for rec in rows:
        p = root / rec["file"]
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x\n")
        files.append((p, rec["family"]))
    (root / "index.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return files


def test_files_of_one_thread_share_a_group_and_a_fold(tmp_path):
    rows = []
    for k in range(24):
        fam = ("cuda-oom", "segfault", "unknown")[k % 3]
        rows.append({"file": f"{fam}/f{k}.log", "family": fam, "thread": f"https://example.invalid/t/{k // 4}"})
    files = _write_index(tmp_path / "real", rows)
    loose = tmp_path / "written" / "clean" / "c.log"
    loose.parent.mkdir(parents=True)
    loose.write_text("ok\n")
    groups = file_groups(files + [(loose, "clean")])
    assert groups[0] == groups[3] != groups[4]
    assert groups[-1] not in groups[:-1]
    cfs = [CorpusFile(p, lab, group=g) for (p, lab), g in zip(files, groups)]
    seen: dict[str, int] = {}
    for fold, (_, test) in enumerate(evaluate._folds(cfs, 3)):
        for i in test:
            assert seen.setdefault(cfs[i].group, fold) == fold, "a thread straddles two folds"
    assert len(seen) == 6


# --------------------------------------------------------------------------- thresholds as constraints

LABELS = ["clean", "cuda-oom", "unknown"]


def _cf(label: str, regex: str | None = None) -> CorpusFile:
    return CorpusFile(Path(f"{label}.log"), label, blocks=["b"], regex=[regex])


def _row(p_oom: float) -> np.ndarray:
    """One block whose most likely label is cuda-oom, at probability p_oom."""
    return np.array([[0.0, p_oom, 0.0]])


def test_threshold_is_the_lowest_that_keeps_unknowns_unknown():
    # 20 unknown files on which the model names cuda-oom at 0.02, 0.04, ... 0.40
    unknown_p = [0.02 * k for k in range(1, 21)]  # 0.02 ... 0.40
    cfs = [_cf("unknown") for _ in unknown_p] + [_cf("cuda-oom") for _ in range(10)] + [_cf("clean")]
    oof = [_row(p) for p in unknown_p] + [_row(0.9) for _ in range(10)] + [np.array([[1.0, 0.0, 0.0]])]
    t, curve = evaluate.choose_threshold(cfs, oof, LABELS)
    # 95% of 20 files: at most one may name a family, the one at 0.40, so 0.40 > t >= 0.38; of the grid, 0.4
    assert t == 0.4
    assert curve[t]["unknown_quiet"] >= evaluate.RETAIN_UNKNOWN
    assert all(curve[s]["unknown_quiet"] < evaluate.RETAIN_UNKNOWN for s in curve if s < t)
    assert curve[t]["right"] == 30


def test_the_rates_count_only_what_the_regexes_leave_quiet():
    # the regexes already (wrongly) name a family for five unknown files: that is not the model's doing
    cfs = [_cf("unknown", "segfault") for _ in range(5)] + [_cf("unknown") for _ in range(20)]
    oof = [_row(0.99) for _ in range(5)] + [_row(0.3)] + [_row(0.001) for _ in range(19)]
    t, curve = evaluate.choose_threshold(cfs, oof, LABELS, "both")
    assert curve[0.01]["unknown_quiet"] == 0.95  # 19 of the 20 files the regexes leave quiet: the five do not count
    t_learned, _ = evaluate.choose_threshold(cfs, oof, LABELS, "learned")
    assert t_learned == 0.01  # the lowest that keeps 95%
    # `both` holds the model to 98% of those files: the one named at 0.3 must go quiet
    assert evaluate.RETAIN_UNKNOWN_BOTH > 0.95 and t == 0.35 and curve[t]["unknown_quiet"] == 1.0


def test_no_threshold_meets_the_constraint_takes_the_highest():
    cfs = [_cf("clean") for _ in range(3)]
    oof = [_row(1.0) for _ in range(3)]
    t, curve = evaluate.choose_threshold(cfs, oof, LABELS)
    assert t == evaluate.THRESHOLDS[-1] and curve[t]["clean_quiet"] == 0.0


def test_both_mode_takes_the_lowest_threshold_from_its_floor():
    # the regexes answer the cuda-oom files; the model names a wrong family for one unknown block at 0.5 (59 of
    # 60 stay unknown, above both modes' bar) and the right one for a cuda-oom file the regexes miss, at 0.3
    cfs = [_cf("cuda-oom", "cuda-oom") for _ in range(10)] + [_cf("cuda-oom")] + [_cf("unknown") for _ in range(60)]
    oof = [_row(0.9) for _ in range(10)] + [_row(0.3)] + [_row(0.5)] + [_row(0.001) for _ in range(59)]
    t, curve = evaluate.choose_threshold(cfs, oof, LABELS, "both")
    assert t == 0.01 and curve[t]["right"] == 70
    t, curve = evaluate.choose_threshold(cfs, oof, LABELS, "both", floor=0.35)
    assert t == 0.35 and curve[t]["right"] == 69


def test_clean_files_are_held_to_98_percent_quiet():
    # one clean file of 60 named at 0.6 is within the bar (59/60 quiet); a second one is not, and then every
    # threshold up to 0.6 fails
    assert evaluate.RETAIN_CLEAN == 0.98
    cfs = [_cf("clean") for _ in range(60)] + [_cf("cuda-oom") for _ in range(5)]
    oof = [_row(0.6)] + [_row(0.001) for _ in range(59)] + [_row(0.9) for _ in range(5)]
    t, curve = evaluate.choose_threshold(cfs, oof, LABELS)
    assert t == 0.01 and curve[0.6]["clean_quiet"] == 59 / 60
    oof[1] = _row(0.6)
    t, curve = evaluate.choose_threshold(cfs, oof, LABELS)
    assert t == 0.65 and curve[0.6]["clean_quiet"] == 58 / 60
    # `both` holds every clean file the regexes leave quiet to quiet: one is enough to raise it
    oof[1] = _row(0.001)
    t, curve = evaluate.choose_threshold(cfs, oof, LABELS, "both")
    assert evaluate.RETAIN_CLEAN_BOTH == 1.0 and t == 0.65 and curve[0.6]["clean_quiet"] == 59 / 60


def test_a_block_that_announces_a_retry_is_never_named():
    retry = ("'(MaxRetryError(\"HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded\"))' "
             "thrown while requesting HEAD https://huggingface.co/m/resolve/main/config.json\nRetrying in 1s [Retry 1/5].")
    assert retry_pending(block_input(retry.splitlines(), {"gpu_model": "H100"}))
    assert not retry_pending(retry.splitlines()[0])
    assert not retry_pending("Retrying in 1s [Retry 1/5].\nOSError: We couldn't connect to 'https://huggingface.co'")
    cf = CorpusFile(Path("clean.log"), "clean", blocks=[retry], regex=[None])
    assert evaluate.answers([cf], [_row(0.99)], LABELS, 0.5) == [None]
    assert evaluate.answers([_cf("clean")], [_row(0.99)], LABELS, 0.5) == ["cuda-oom"]


def test_a_death_by_signal_is_one_token_however_it_is_printed():
    for line in ("exitcode  : -9 (pid: 4242)", "process exited with exit code 137", "Signal 9 (SIGKILL) received",
                 "got SIGKILL"):
        assert "killsig_KILL" in normalise_block(line, signals=True), line
    assert normalise_block("exitcode  : -11 (pid: 1)", signals=True).splitlines()[-1] == "killsig_SEGV"
    for line in ("exitcode  : 1 (pid: 4242)", "exit code 3", "signal 1 received"):
        assert "killsig_" not in normalise_block(line, signals=True), line
    assert "killsig_" not in normalise_block("exitcode  : -9 (pid: 4242)")
