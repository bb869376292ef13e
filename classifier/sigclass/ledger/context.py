"""Context facts: what a log says about the hardware, the job and the unit's work, and how far it holds.

A fact is read by a ledger fact pattern (`facts:` of any family). This table
says, for the facts sigclass knows by name, how far a value printed by one
worker holds (`scope`), which group of facts it belongs to (`group`, the
names a probe declaration may use in `keep`) and how its values compare
(`kind`). A fact the table does not name is a unit fact of group `other`,
compared as text.

* scope `node`: the hardware of one machine (a GPU listing, the driver); it
  holds for every worker on the same host.
* scope `job`: the job's settings (engine arguments, model, versions); it
  holds for every worker of the run.
* scope `unit`: what one unit did (its prompt lengths); never borrowed.
"""

from __future__ import annotations

from dataclasses import dataclass

import regex


@dataclass(frozen=True, slots=True)
class ContextFact:
    name: str
    scope: str  # node | job | unit
    group: str  # hardware | engine | model | code | workload | other
    kind: str  # text | bool | number | gpu | path | version


CONTEXT: dict[str, ContextFact] = {f.name: f for f in (
    ContextFact("gpu_model", "node", "hardware", "gpu"),
    ContextFact("host", "node", "hardware", "text"),
    ContextFact("driver", "node", "hardware", "version"),
    ContextFact("cuda_version", "node", "hardware", "version"),
    ContextFact("prefix_caching", "job", "engine", "bool"),
    ContextFact("enforce_eager", "job", "engine", "bool"),
    ContextFact("max_model_len", "job", "engine", "number"),
    ContextFact("gpu_memory_utilization", "job", "engine", "number"),
    ContextFact("tensor_parallel", "job", "engine", "number"),
    ContextFact("dtype", "job", "engine", "text"),
    ContextFact("model", "job", "model", "path"),
    ContextFact("vllm_version", "job", "code", "version"),
    ContextFact("torch_version", "job", "code", "version"),
    ContextFact("code_version", "job", "code", "text"),
    ContextFact("prompt_tokens_p99", "unit", "workload", "number"),
    ContextFact("prompt_tokens_p50", "unit", "workload", "number"),
    ContextFact("shared_prefix_tokens", "unit", "workload", "number"),
    # the state of the work when a log ends (last value wins; scan.exitnoise): the last generate bar, the API server
    ContextFact("engine_work", "job", "other", "text"),
    ContextFact("api_server", "job", "other", "text"),
)}

# facts that say where a log's work stood, not what ran it: no feature of the learned model
STATE_FACTS = frozenset({"engine_work", "api_server"})


GROUPS = ("hardware", "engine", "model", "code", "workload")


CONTROL_GROUPS = ("engine", "model", "code")  # what a contrast keeps equal unless a probe says otherwise


def fact_info(name: str) -> ContextFact:
    return CONTEXT.get(name) or ContextFact(name, "unit", "other", "text")


def expand(names: list[str] | tuple[str, ...]) -> list[str]:
    """Fact names with group names (`engine`, `code`, ...) replaced by their facts, in order, without repeats."""
    out: list[str] = []
    for n in names:
        for m in ([f.name for f in CONTEXT.values() if f.group == n] if n in GROUPS else [n]):
            if m not in out:
                out.append(m)
    return out


_GPU = regex.compile(r"(?:(?:GeForce|Quadro|TITAN) )?((?:RTX|GTX) ?[A-Z]?[0-9]{3,4}[A-Za-z]*|[A-Z]+[0-9]+[A-Za-z]*)")
_TRUE = {"true", "on", "1", "yes", "enabled", "--enable-prefix-caching", "--enforce-eager"}
_FALSE = {"false", "off", "0", "no", "disabled", "--no-enable-prefix-caching", "--no-enforce-eager"}


def normalise(name: str, value: str) -> str:
    """The comparable form of a fact's value: `H100 80GB HBM3` -> `H100`, `True`/`on` -> `on`, `30,544` -> `30544`,
    `/models/Llama-3.1-8B` -> `Llama-3.1-8B`, `2.8.0+cu128` -> `2.8.0`."""
    v = value.strip().strip("'\"")
    kind = fact_info(name).kind
    if kind == "gpu":
        v = regex.sub(r"^(NVIDIA |Tesla )+", "", v)
        m = _GPU.match(v)
        return m.group(1).replace("  ", " ") if m else v
    if kind == "bool":
        low = v.lower()
        return "on" if low in _TRUE else "off" if low in _FALSE else v
    if kind == "number":
        n = v.replace(",", "").replace("_", "")
        try:
            x = float(n)
        except ValueError:
            return v
        return str(int(x)) if x == int(x) else repr(x)
    if kind == "path":
        return v.rstrip("/").rsplit("/", 1)[-1] or v
    if kind == "version":
        return v.split("+", 1)[0]
    return v


def as_number(value: str) -> float | None:
    try:
        return float(value.replace(",", ""))
    except ValueError:
        return None
