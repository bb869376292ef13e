"""vLLM's engine monitor line at a normal exit is quiet; the same line at a real engine death is kept
(sigclass.scan.exitnoise)."""

from __future__ import annotations

import pytest

MONITOR = "ERROR 01-07 20:00:59 [core_client.py:564] Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.\n"
DONE = "Processed prompts: 100%|██████████| 4/4 [00:01<00:00,  2.50it/s, est. speed input: 14.01 toks/s]\n"
DEAD = ('Traceback (most recent call last):\n  File "run.py", line 12, in <module>\n    outputs = llm.generate(prompts)\n'
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.\n")


def _families(scanner, text: str) -> list[tuple[str, str]]:
    res = scanner.scan_text(text)
    return [(f.family, f.role) for f in res.findings]


@pytest.mark.parametrize("text", [
    # the script printed its results after generate returned (vLLM's offline example), then exited
    "Prompt: 'The capital of France is', Generated text: ' Paris.'\n" + MONITOR,
    # the last generate bar is full (tqdm's carriage returns keep several updates on one line)
    "Processed prompts:   0%|          | 0/4 [00:00<?, ?it/s]\rProcessed prompts: 100%|██████████| 4/4 [00:01<00:00]\n" + MONITOR,
    DONE + "INFO 01-07 20:00:58 [llm.py:295] done\n" + MONITOR + "\n",
    # Ctrl-C reaches the engine process as well as the API server that was shutting down
    "INFO:     Application startup complete.\nINFO:     Shutting down\n"
    "INFO 01-07 20:00:58 [launcher.py:80] Shutting down FastAPI HTTP server.\n" + MONITOR,
])
def test_monitor_line_at_a_normal_exit_is_quiet(scanner, text):
    res = scanner.scan_text(text)
    assert res.findings == []
    assert res.verdict is None or res.verdict.cause is None


@pytest.mark.parametrize("text", [
    MONITOR,  # nothing says the work had finished
    DONE + "Processed prompts:  37%|███▋      | 3/8 [00:02<00:03]\n" + MONITOR,  # a generate call still running
    "INFO:     Application startup complete.\n" + DONE + MONITOR,  # a server still up: its engine died under it
    DONE + MONITOR + DEAD,  # a request failed on after it
])
def test_monitor_line_at_a_real_death_is_kept(scanner, text):
    got = _families(scanner, text)
    assert got and got[0] == ("vllm-engine-dead", "root")


def test_monitor_line_after_a_root_fault_stays_its_victim(scanner):
    text = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n" + DONE + MONITOR
    assert _families(scanner, text) == [("cuda-oom", "root"), ("vllm-engine-dead", "secondary")]


def test_monitor_line_and_the_dead_engine_error_below_it_keep_their_order(scanner):
    res = scanner.scan_text(DONE + MONITOR + DEAD)
    lines = [f.line for f in res.findings]
    assert lines == sorted(lines) and res.findings[0].line == 2
