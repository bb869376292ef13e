"""Serving engines and cluster families: the dead-engine and dead-actor lines stay victims of a root fault printed in
the same log, above or below them, and the launchers' own words name the family when nothing else does."""

from __future__ import annotations

from sigclass.authoring.examples import first_root_family

CORE = "(EngineCore_DP0 pid=200) ERROR 07-23 06:51:49 [core.py:710] "
ROOT = (CORE + "EngineCore encountered a fatal error.\n"
        + CORE + "Traceback (most recent call last):\n"
        + CORE + '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 701, in run_engine_core\n'
        + CORE + "    engine_core.run_busy_loop()\n"
        + CORE + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB\n")
DEAD = ("(APIServer pid=1) ERROR 07-23 06:51:50 [async_llm.py:704] vllm.v1.engine.exceptions.EngineDeadError: "
        "EngineCore encountered an issue. See stack trace (above) for the root cause.\n")


def _roles(res) -> list[tuple[str, str]]:
    return [(f.family, f.role) for f in res.findings]


def test_dead_engine_printed_before_the_engine_traceback_is_its_victim(scanner):
    # the front end's line reached the file first: the EngineCore process's traceback below it is the cause
    res = scanner.scan_text(DEAD + ROOT)
    assert _roles(res) == [("vllm-engine-dead", "secondary"), ("cuda-oom", "root")]
    assert first_root_family(res.findings) == "cuda-oom"
    assert res.verdict.cause.family == "cuda-oom"


def test_dead_engine_after_the_engine_traceback_is_its_victim(scanner):
    res = scanner.scan_text(ROOT + DEAD)
    assert _roles(res) == [("cuda-oom", "root"), ("vllm-engine-dead", "secondary")]
    assert res.verdict.cause.family == "cuda-oom"


def test_dead_engine_alone_is_the_cause(scanner):
    res = scanner.scan_text(DEAD)
    assert _roles(res) == [("vllm-engine-dead", "root")]


def test_dead_actor_before_the_actors_own_traceback_is_its_victim(scanner):
    text = ("ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
            "(RayWorker pid=33) Traceback (most recent call last):\n"
            '(RayWorker pid=33)   File "w.py", line 3, in f\n'
            "(RayWorker pid=33) RuntimeError: CUDA error: an illegal memory access was encountered\n")
    res = scanner.scan_text(text)
    assert first_root_family(res.findings) == "cuda-illegal-memory-access"
    assert res.verdict.cause.family == "cuda-illegal-memory-access"


def test_tgi_launcher_lines_are_victims_of_the_shard_error(scanner):
    text = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 224.00 MiB. GPU\n"
            " rank=0\n"
            "2024-09-02T23:29:59.823812Z ERROR text_generation_launcher: Shard 0 failed to start\n"
            "2024-09-02T23:29:59.823837Z  INFO text_generation_launcher: Shutting down shards\n"
            "Error: ShardCannotStart\n")
    res = scanner.scan_text(text)
    assert first_root_family(res.findings) == "cuda-oom"
    assert ("vllm-engine-dead", "secondary") in _roles(res)


def _hub_block(retry: str) -> str:
    err = ("[2026-05-21 23:55:54] WARNING _http.py:320: '(MaxRetryError(\"HTTPSConnectionPool(host='huggingface.co', "
           "port=443): Max retries exceeded with url: /org/model/resolve/main/config.json (Caused by "
           "ConnectTimeoutError(<HTTPSConnection(host='huggingface.co', port=443) at 0x7f00>, 'Connection to "
           "huggingface.co timed out. (connect timeout=10)'))\"), '(Request ID: 1)')' thrown while requesting HEAD "
           "https://huggingface.co/org/model/resolve/main/config.json\n")
    return err + f"[2026-05-21 23:55:54] WARNING _http.py:329: Retrying in 8s [{retry}].\n" + err


def test_hub_retries_early_are_a_passing_fault_late_ones_are_the_hub_out_of_reach(scanner):
    assert scanner.scan_text(_hub_block("Retry 1/5")).findings == []
    assert first_root_family(scanner.scan_text(_hub_block("Retry 4/5")).findings) == "hf-hub-unreachable"
