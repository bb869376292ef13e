"""vLLM's engine monitor at a normal exit: `Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.`

The V1 client (`core_client.py`, `MPClient.start_engine_core_monitor`, vLLM 0.10 to 0.17) waits on its
EngineCore processes' sentinels in a thread and logs that line whenever one ends while the client is still
alive. An explicit shutdown marks the client dead first (`BackgroundResources.__call__` sets `engine_dead`), so it
stays quiet; but a script that ends with its `LLM` never shut down has its engine process ended by the
interpreter's exit before the client's finalizer runs, and the monitor prints the same line on a run that
finished (vLLM later checks the finalizer before logging: PR 36270).

A real death looks different in the same log: a root fault of its own (the engine's traceback, a worker's death, a
kill), a request that then fails (`EngineDeadError`, another finding below the line), a generate call still
running (its last `Processed prompts:` bar short of 100%) or an API server that was still up. So the line alone is
held back when it is printed, and dropped at the end of the source when it was the last failure of a log whose
work had finished: the last generate bar at 100% or the results printed after it, and no API server left up (a
server's own shutdown words count as finished: Ctrl-C reaches the engine process as well as the server).
"""

from __future__ import annotations

import regex

from sigclass.records import Finding

FAMILY = "vllm-engine-dead"
# the monitor's own line (the line prefix and the logger's header are not part of a block's body)
MONITOR = regex.compile(r"Engine core proc [A-Za-z0-9_]+ died unexpectedly, shutting down client")
# facts of the vllm-engine-dead signature: the last generate bar's percentage (or `Generated text` when the script
# printed its results), and the API server's last word (up, or shutting down)
PROGRESS_FACT = "engine_work"
SERVER_FACT = "api_server"
FINISHED = frozenset({"100", "Generated text"})
SERVER_UP = frozenset({"Application startup complete", "Uvicorn running on", "Starting vLLM API server"})
SERVER_DOWN = frozenset({"Shutting down FastAPI HTTP server", "Application shutdown complete", "Waiting for application shutdown"})


def monitor_only(f: Finding) -> bool:
    """Whether a finding is the engine monitor's line and nothing else (no traceback, no other error)."""
    if f.family != FAMILY:
        return False
    body = [b for b in (f.block or ()) if b.strip()]
    return bool(body) and all(MONITOR.search(b) for b in body)


def work_finished(facts: dict[str, str]) -> bool:
    """Whether the log's last generate call had finished and no API server was left serving."""
    server = facts.get(SERVER_FACT)
    if server in SERVER_DOWN:
        return True  # Ctrl-C reaches the engine process too: it may end before the server's own shutdown of it
    return server not in SERVER_UP and facts.get(PROGRESS_FACT) in FINISHED
