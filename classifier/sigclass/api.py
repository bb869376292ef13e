"""The Python API: classify a log, analyse a run, explain a gotcha.

    >>> import sigclass
    >>> result = sigclass.classify("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    >>> result.findings[0].family
    'cuda-oom'

Every function returns a frozen dataclass with ``to_dict()`` (plain JSON
types, the shapes of ``sigclass schema``) and ``from_dict()``. Errors are
``SigclassError`` subclasses. The ledger and the compiled scanner are built
once per process and per ledger; ``clear_cache()`` drops them.
"""

from __future__ import annotations

import os
from pathlib import Path
import threading
from typing import Any, Iterable, Sequence, Union
import warnings

from sigclass.errors import InputError, Problem, SignatureError
from sigclass.problems import ProblemLine
from sigclass.records import Cause, fold, Verdict, Victim  # noqa: F401  (the verdict's types, re-exported)
from sigclass.results import (  # noqa: F401  (the API's types, re-exported)
    Classification, Comparison, FindingRecord, Gotcha, GotchaSummary, RootFault, RunAnalysis, RunUnit,
    SystematicFault,
)
from sigclass.vocab import SignatureMode


LedgerArg = Union[None, str, os.PathLike, Iterable[Union[str, os.PathLike]]]

SIGNATURE_MODES = tuple(SignatureMode)

_MAX_PATH_CHARS = 4096


class _Engine:
    """A ledger with its compiled scanner."""

    def __init__(self, ledger, scanner, notes: tuple[str, ...]) -> None:
        self.ledger = ledger
        self.scanner = scanner
        self.notes = notes  # ledger problems and model fallbacks, reported with every result


_cache_lock = threading.Lock()

# One scan at a time per process: a scanner keeps per-scan state and its Hyperscan scratch space must not
# be shared between threads (run analysis uses the cached scanners of sigclass.runs the same way).
_scan_lock = threading.RLock()

_ledgers: dict[tuple[str, ...], Any] = {}

_engines: dict[tuple[tuple[str, ...], str], _Engine] = {}


def clear_cache() -> None:
    """Forget the loaded ledgers and scanners (after editing a signature file in a long-lived process)."""
    with _cache_lock:
        _ledgers.clear()
        _engines.clear()


def _ledger_key(ledger: LedgerArg) -> tuple[str, ...]:
    if ledger is None:
        return ()
    items = [ledger] if isinstance(ledger, (str, os.PathLike)) else list(ledger)
    key = []
    for item in items:
        p = Path(item)
        if not p.exists():
            raise SignatureError(Problem(str(p), "ledger path does not exist; name a .yaml file or a folder of them"))
        key.append(str(p.resolve()))
    return tuple(key)


def _load_ledger(key: tuple[str, ...]):
    from sigclass.ledger.pack import load_ledger

    with _cache_lock:
        lg = _ledgers.get(key)
        if lg is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lg = load_ledger(list(key))
            _ledgers[key] = lg
        return lg


def get_ledger(ledger: LedgerArg = None):
    """The shipped pack plus any extra files or folders (later ones override by id), cached."""
    return _load_ledger(_ledger_key(ledger))


def _engine(ledger: LedgerArg, signatures: str) -> _Engine:
    if signatures not in SIGNATURE_MODES:
        raise InputError(f"signatures must be one of {', '.join(SIGNATURE_MODES)}, not {signatures!r}")
    key = _ledger_key(ledger)
    lg = _load_ledger(key)
    with _cache_lock:
        eng = _engines.get((key, signatures))
        if eng is not None:
            return eng
        from sigclass.scan.factory import build_scanner

        notes = [f"{p} (this signature file is skipped)" for p in lg.problems]
        scanner = build_scanner(lg, signatures, on_note=notes.append, require_model=True)
        eng = _Engine(lg, scanner, tuple(notes))
        _engines[(key, signatures)] = eng
        return eng


_LOG_SUFFIX = (".log", ".txt", ".out", ".err", ".gz", ".zst", ".json", ".jsonl")


def looks_like_path(s: str) -> bool:
    """A one-word string with a directory part or a log file's suffix: meant as a path, not as log text."""
    if not s or len(s) > _MAX_PATH_CHARS or any(ch.isspace() for ch in s.strip()) or "\0" in s:
        return False
    s = s.strip()
    return "/" in s or os.sep in s or s.startswith("~") or s.lower().endswith(_LOG_SUFFIX)


def _as_path(text_or_path: str | os.PathLike) -> str | None:
    """The path to read, or None when the argument is log text."""
    if isinstance(text_or_path, os.PathLike):
        p = os.fspath(text_or_path)
        return p if p != "-" else os.path.join(".", "-")  # never stdin
    s = text_or_path
    if not s or "\n" in s or "\0" in s or len(s) > _MAX_PATH_CHARS:
        return None
    try:
        return s if os.path.exists(s) else None
    except (OSError, ValueError):
        return None


def classify(text_or_path: str | bytes | os.PathLike, *, ledger: LedgerArg = None,
             signatures: str = SignatureMode.BOTH, as_text: bool = False) -> Classification:
    """Classify the failures in a log.

    A ``pathlib.Path`` is always read as a file; a ``str`` naming an existing
    file is read as that file; any other ``str`` (or ``bytes``) is log text.
    ``ledger`` adds signature files or folders to the shipped pack;
    ``signatures`` is ``regex``, ``learned`` or ``both``.
    A one-line ``str`` that looks like a path (``"trian.log"``) but names no
    file raises InputError rather than being read as log text; pass
    ``as_text=True`` to classify a ``str`` as log text whatever it looks like.
    Raises InputError when the file cannot be read.
    """
    if isinstance(text_or_path, (bytes, bytearray)):
        text_or_path = bytes(text_or_path).decode("utf-8", "replace")
        as_text = True
    if not isinstance(text_or_path, (str, os.PathLike)):
        raise InputError(f"classify() takes log text or a path, not {type(text_or_path).__name__}")
    eng = _engine(ledger, signatures)
    path = None if as_text and isinstance(text_or_path, str) else _as_path(text_or_path)
    if path is None and not as_text and isinstance(text_or_path, str) and looks_like_path(text_or_path):
        raise InputError(f"{text_or_path}: no such file; to classify this string as log text, "
                         "call classify(text, as_text=True)")
    with _scan_lock, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # what a warning says is in the result's problems too
        if path is None:
            res = eng.scanner.scan_text(str(text_or_path))
        else:
            res = eng.scanner.scan(path, live=False)
    findings = tuple(FindingRecord.from_finding(f) for f in fold(res.findings))
    problems = tuple(ProblemLine(p) for p in dict.fromkeys((*eng.notes, *res.problems)))
    return Classification(res.source, findings, problems, res.verdict)


def explain(family_id: str, *, ledger: LedgerArg = None) -> Gotcha:
    """The whole ledger entry of a family. Raises InputError for an id the ledger does not know."""
    lg = get_ledger(ledger)
    if family_id not in lg:
        import difflib

        close = difflib.get_close_matches(str(family_id), list(lg.signatures), n=3, cutoff=0.0)
        raise InputError(f"no family {family_id!r}; did you mean {', '.join(close)}? (list_gotchas shows every id)")
    return Gotcha.from_dict(lg[family_id].to_dict())


def list_gotchas(*, ledger: LedgerArg = None) -> list[GotchaSummary]:
    """Every family of the ledger, by id."""
    return [GotchaSummary(s.id, s.title, s.role, s.status) for s in get_ledger(ledger)]


def compare(paths: Sequence[str | os.PathLike], *, ledger: LedgerArg = None, signatures: str = SignatureMode.BOTH,
            n_jobs: int = -1) -> Comparison:
    """Compare runs (a failing run and the runs that probe it): discriminating facts, probe outcomes, verdicts.

    Raises InputError when a path is not a run directory that can be listed.
    """
    from sigclass.diagnosis.analysis import compare as compare_runs
    from sigclass.runs.discover import plan_run
    from sigclass.runs.parallel import analyse_plans
    from sigclass.runs.sources import ScanConfig

    if signatures not in SIGNATURE_MODES:
        raise InputError(f"signatures must be one of {', '.join(SIGNATURE_MODES)}, not {signatures!r}")
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    plans = [plan_run(os.fspath(p)) for p in dict.fromkeys(os.fspath(p) for p in paths)]
    if not plans:
        raise InputError("compare needs at least one run directory")
    for plan in plans:
        if not plan.listable:
            raise InputError("; ".join(plan.problems) or f"{plan.path}: cannot read this run directory")
    cfg = ScanConfig(ledger=_ledger_key(ledger), signatures=signatures)
    with _scan_lock:
        batch = analyse_plans(plans, cfg=cfg, n_jobs=n_jobs, small_in_process=n_jobs == -1)
    return Comparison.from_dict(compare_runs(batch.runs, get_ledger(ledger)))


def analyze_run(path: str | os.PathLike, *, ledger: LedgerArg = None, signatures: str = SignatureMode.BOTH,
                n_jobs: int = -1) -> RunAnalysis:
    """The post-mortem of one run directory (units, root faults, cascades, systematic faults).

    Raises InputError when the path is not a directory that can be listed;
    files inside it that cannot be read are reported in ``problems``.
    """
    from sigclass.runs.discover import plan_run
    from sigclass.runs.parallel import analyse_plans
    from sigclass.runs.sources import ScanConfig

    if signatures not in SIGNATURE_MODES:
        raise InputError(f"signatures must be one of {', '.join(SIGNATURE_MODES)}, not {signatures!r}")
    cfg = ScanConfig(ledger=_ledger_key(ledger), signatures=signatures)
    plan = plan_run(os.fspath(path))
    if not plan.listable:
        raise InputError("; ".join(plan.problems) or f"{path}: cannot read this run directory")
    with _scan_lock:
        # a small run is scanned in this process: starting worker processes would cost more than it saves
        batch = analyse_plans([plan], cfg=cfg, n_jobs=n_jobs, small_in_process=n_jobs == -1)
    return RunAnalysis.from_dict(batch.runs[0].to_dict())
