"""Cross-validation that holds out whole projects, and the features meant to carry across stacks and phrasings."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from sigclass.cli.app import app
from sigclass.learn import evaluate
from sigclass.learn.blocktext import normalise_block, path_kinds
from sigclass.learn.corpus import CorpusFile, file_groups, project_of
from test_learn_cv import _write_index

# --------------------------------------------------------------------------- projects


def test_a_thread_belongs_to_its_repository_or_its_site():
    assert project_of("https://github.com/vllm-project/vllm/issues/17965") == "vllm-project/vllm"
    assert project_of("https://github.com/NVIDIA/nccl/issues/1283#issuecomment-1") == "nvidia/nccl"
    assert project_of("https://github.com/pytorch/pytorch/pull/45150") == "pytorch/pytorch"
    assert project_of("https://discuss.pytorch.org/t/nccl-error/1234") == "discuss.pytorch.org"
    # a file without a thread is its own group, whatever the grouping
    assert project_of("file:/corpus/written/clean/a.log") == "file:/corpus/written/clean/a.log"


def test_folds_by_project_keep_every_thread_of_a_repository_in_one_fold(tmp_path):
    rows = []
    for k in range(36):
        fam = ("cuda-oom", "segfault", "unknown")[k % 3]
        # 6 projects of 2 threads of 3 files each
        rows.append({"file": f"{fam}/f{k}.log", "family": fam,
                     "thread": f"https://github.com/org{k // 6}/repo/issues/{k // 3}"})
    files = _write_index(tmp_path / "real", rows)
    cfs = [CorpusFile(p, lab, group=g) for (p, lab), g in zip(files, file_groups(files))]
    assert len({cf.group for cf in cfs}) == 12
    by_thread: dict[str, set[int]] = {}
    by_project: dict[str, set[int]] = {}
    for fold, (_, test) in enumerate(evaluate._folds(cfs, 3, by="thread")):
        for i in test:
            by_thread.setdefault(project_of(cfs[i].group), set()).add(fold)
    for fold, (_, test) in enumerate(evaluate._folds(cfs, 3, by="project")):
        for i in test:
            by_project.setdefault(project_of(cfs[i].group), set()).add(fold)
    assert len(by_project) == 6 and all(len(f) == 1 for f in by_project.values())
    # grouped by thread, the two threads of some project land in different folds
    assert any(len(f) > 1 for f in by_thread.values())
    with pytest.raises(ValueError, match="thread"):
        list(evaluate._folds(cfs, 3, by="repo"))


def test_eval_refuses_an_unknown_grouping_in_one_line():
    res = CliRunner().invoke(app, ["eval", "--cv-groups", "repo"])
    assert res.exit_code == 2
    assert "--cv-groups" in res.output and "thread, project" in res.output
    assert "Traceback" not in res.output


# --------------------------------------------------------------------------- path kinds


def test_a_system_location_of_a_path_becomes_a_token_and_the_rest_stays_masked():
    assert path_kinds("No space left on device: '/dev/shm/torch_1234_abc'") == ["pathin_dev_shm"]
    assert path_kinds("cp /tmp/x /home/alice/ckpt/model.pt") == ["pathin_tmp", "pathin_home"]
    # a relative path, or one inside a word, says nothing
    assert path_kinds("wrote ./dev/shm/x and foo/dev/shm") == []
    text = normalise_block("OSError: [Errno 28] No space left on device: '/dev/shm/joblib_mm/a.pkl'", path_kinds=True)
    assert "pathin_dev_shm" in text and "joblib_mm" not in text and "<PATH>" in text
    assert "pathin_" not in normalise_block("OSError: [Errno 28] No space left on device: '/dev/shm/x'")


def test_shared_memory_and_disk_read_apart_when_only_the_path_differs():
    shm = normalise_block("OSError: [Errno 28] No space left on device: '/dev/shm/a'", path_kinds=True)
    disk = normalise_block("OSError: [Errno 28] No space left on device: '/data/ckpt/a'", path_kinds=True)
    assert shm != disk
    assert normalise_block("OSError: [Errno 28] No space left on device: '/dev/shm/a'") == \
        normalise_block("OSError: [Errno 28] No space left on device: '/data/ckpt/a'")


def test_a_count_out_of_a_total_reads_as_two_numbers_not_a_path():
    text = normalise_block("Retrying in 1s [Retry 1/5].\nstep 300/1000 wrote /data/ckpt/300", path_kinds=True)
    assert "[Retry <NUM>/<NUM>]" in text and "step <NUM>/<NUM>" in text
    assert "<PATH>" in text and "pathin_data" in text


def test_a_death_named_by_its_signal_description_is_the_same_token_as_by_its_number():
    bus = normalise_block("RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error.", signals=True)
    assert "killsig_BUS" in bus.splitlines()
    segv = normalise_block("bash: line 1:  4242 Segmentation fault (core dumped) python train.py", signals=True)
    assert "killsig_SEGV" in segv.splitlines()
    assert "killsig_SEGV" in normalise_block("exitcode  : -11 (pid: 4242)", signals=True).splitlines()
    # the words alone, in a sentence, are no death
    assert "killsig_" not in normalise_block("ERROR: Unexpected segmentation fault encountered in worker.", signals=True)


# --------------------------------------------------------------------------- source lines under frames

_TWO_TRACEBACKS = """Traceback (most recent call last):
  File "main.py", line 214, in <module>
    solver.train_and_eval()
  File "/content/src/solver.py", line 123, in train
    for i_batch, batch_data in enumerate(self.train_loader):
  File "/usr/lib/python3.10/site-packages/torch/utils/data/_utils/collate.py", line 9, in collate
    return torch.LongTensor(batch)
           ^^^^^^^^^^^^^^^^^^^^^^^
ValueError: expected sequence of length 12 at dim 1 (got 9)
Traceback (most recent call last):
  File "run.py", line 3, in <module>
    assert ok, "not ok"
AssertionError: not ok"""


def test_the_source_lines_under_frames_are_kept_all_the_innermost_or_none():
    every = normalise_block(_TWO_TRACEBACKS, frames="none", code="all").splitlines()
    last = normalise_block(_TWO_TRACEBACKS, frames="none", code="last").splitlines()
    none = normalise_block(_TWO_TRACEBACKS, frames="none", code="none").splitlines()
    assert "solver.train_and_eval()" in every and "return torch.LongTensor(batch)" in every
    # the statement that raised, one per traceback; a project's own calls above it are left out
    assert "solver.train_and_eval()" not in last
    assert "for i_batch, batch_data in enumerate(self.train_loader):" not in last
    assert "return torch.LongTensor(batch)" in last and 'assert ok, "not ok"' in last
    assert not any(x.startswith(("return ", "assert ", "solver.", "for ")) for x in none)
    for text in (every, last, none):
        assert "ValueError: expected sequence of length <NUM> at dim <NUM> (got <NUM>)" in text
        assert "AssertionError: not ok" in text and "Traceback (most recent call last):" in text
    # the frames themselves follow their own setting
    assert "at main in <module>" not in last
    assert "at data._utils.collate in collate" in normalise_block(_TWO_TRACEBACKS, frames="all", code="last")


def test_an_unknown_setting_for_source_lines_is_refused():
    from sigclass.learn.estimator import BlockText

    with pytest.raises(ValueError, match="code"):
        BlockText(code="some").fit(["x"])
