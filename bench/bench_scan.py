"""Scan benchmark: sigclass against ripgrep and GNU grep on large generated logs, one case after another.

Cases (each log generated once under bench/out/, with its manifest):
    realistic  bench/gen_realistic.py --case realistic  (300 MB by default, --size-mb)
    worst      bench/gen_realistic.py --case worst      (1 line in 5 matches a ledger pattern; --other-mb)
    storm      bench/gen_realistic.py --case storm      (a failure every few lines; --other-mb)
    generated  bench/gen_log.py                         (the first generator; --other-mb)

For each, it reads the log once to warm the page cache, then, in the same run and
interleaved, times whole processes:

    sigclass scan LOG                         (default options, the full shipped pack)
    sigclass scan --format jsonl LOG          (the findings graded against the manifest)
    rg -c -f PATTERNS LOG
    LC_ALL=C grep -E -c -f PATTERNS LOG

PATTERNS is the output of `sigclass ledger patterns`. Patterns ripgrep rejects
are dropped for ripgrep (and named). GNU grep has no `(?:...)`, `\\d` or `\\s`:
those are rewritten to their ERE equivalents, and any pattern grep still rejects
or warns about is dropped for grep (and named). sigclass is used only through
its command line.

Reports the median wall time of N runs as MB/s (MB = 10^6 bytes), the ratio
sigclass/ripgrep by wall and by CPU time, peak RSS, the share of lines the pack
matches, and whether every injected failure was found with the manifest's family
(a finding whose [line, end_line] covers the failure's first line, of the same
worker when the manifest names one). Then a start-up figure: `sigclass scan` of
a ~0.1 MB log beside `python -c pass`, median of N runs.
Exit status: 0 all found, 1 some injected failure missed, 2 a tool failed.

    python bench/bench_scan.py                                  # all four cases, 3 runs
    python bench/bench_scan.py --cases realistic --runs 5 --json
    python bench/bench_scan.py --cases generated --other-mb 1000 --runs 1   # RSS does not grow with input
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gen_log  # noqa: E402
import gen_realistic  # noqa: E402

MB = gen_log.MB
TARGET_RATIO = 1.0
TARGET_RSS_MB = 100.0
TIME_V = "/usr/bin/time"


# ----------------------------------------------------------------------------- tools


def tool_path(name: str) -> str | None:
    """The real executable: prefer the one beside this interpreter (a pyenv shim adds ~50 ms of shell)."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which(name)


def rss_method() -> str:
    if Path(TIME_V).is_file() and os.access(TIME_V, os.X_OK):
        return "time-v"
    try:
        import psutil  # noqa: F401

        return "psutil"
    except ImportError:
        return "getrusage"


_WRAP = ("import resource, subprocess, sys\n"
         "with open(sys.argv[1], 'wb') as out:\n"
         "    rc = subprocess.run(sys.argv[3:], stdout=out, stderr=open(sys.argv[2], 'wb')).returncode\n"
         "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
         "print(rc, u.ru_maxrss, u.ru_utime + u.ru_stime)\n")


def run_timed(cmd: list[str], out_path: Path, env: dict[str, str], method: str, work: Path) -> dict:
    """Run one command with stdout to out_path; wall seconds, exit code, peak RSS (KiB), CPU seconds, stderr."""
    err_path = work / (out_path.name + ".stderr")
    rss_kib = cpu = None
    if method == "time-v":
        full = [TIME_V, "-v", "-o", str(err_path) + ".time", *cmd]
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            t0 = time.perf_counter()
            rc = subprocess.run(full, stdout=out, stderr=err, env=env).returncode
            wall = time.perf_counter() - t0
        tv = Path(str(err_path) + ".time").read_text()
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", tv)
        rss_kib = int(m.group(1)) if m else None
        ut, st = re.search(r"User time \(seconds\): ([\d.]+)", tv), re.search(r"System time \(seconds\): ([\d.]+)", tv)
        cpu = float(ut.group(1)) + float(st.group(1)) if ut and st else None
    elif method == "psutil":
        import psutil

        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            t0 = time.perf_counter()
            p = psutil.Popen(cmd, stdout=out, stderr=err, env=env)
            peak = 0
            while p.poll() is None:
                try:
                    procs = [p, *p.children(recursive=True)]
                    peak = max(peak, sum(q.memory_info().rss for q in procs))
                    ct = p.cpu_times()
                    cpu = ct.user + ct.system
                except psutil.Error:
                    pass
                time.sleep(0.01)
            wall = time.perf_counter() - t0
            rc = p.returncode
        rss_kib = peak // 1024 or None
    else:  # a fresh Python parent per run, so RUSAGE_CHILDREN covers only this command
        t0 = time.perf_counter()
        res = subprocess.run([sys.executable, "-c", _WRAP, str(out_path), str(err_path), *cmd],
                             capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
        rc_s, rss_s, cpu_s = res.stdout.split()
        rc, rss_kib, cpu = int(rc_s), int(rss_s), float(cpu_s)
    return {"wall": wall, "rc": rc, "rss_kib": rss_kib, "cpu": cpu,
            "stderr": err_path.read_text(encoding="utf-8", errors="replace")[-4000:]}


# ----------------------------------------------------------------------------- patterns


def check_rg(rg: str, pats: list[str]) -> list[tuple[str, str]]:
    """Patterns ripgrep rejects, with its message."""
    bad = []
    for p in pats:
        r = subprocess.run([rg, "-q", "--regexp", p, os.devnull], capture_output=True, text=True)
        if r.returncode == 2:
            bad.append((p, (r.stderr.strip().splitlines() or ["error"])[-1]))
    return bad


def _ere_class(p: str, i: int) -> tuple[str, int]:
    """Rewrite the bracket expression starting at p[i] == '['; returns (ERE text, index after it)."""
    i += 1
    neg = p[i:i + 1] == "^"
    i += neg
    items: list[str] = []
    rbracket = dash = False
    first = True
    while i < len(p):
        c = p[i]
        if c == "]" and not first:
            i += 1
            break
        first = False
        if c == "\\" and i + 1 < len(p):
            d = p[i + 1]
            i += 2
            if d == "]":
                rbracket = True
            elif d == "-":
                dash = True
            elif d == "n":
                pass  # a newline never occurs inside a line
            else:
                items.append({"d": "0-9", "s": "[:space:]", "w": "[:alnum:]_", "t": "\t"}.get(d, d))
            continue
        if c == "]":
            rbracket = True
        else:
            items.append(c)
        i += 1
    return "[" + ("^" if neg else "") + ("]" if rbracket else "") + "".join(items) + ("-" if dash else "") + "]", i


def to_ere(p: str) -> str:
    """Rewrite the Python-regex constructs GNU ERE lacks or reads differently into ERE equivalents:
    `(?:` -> `(`, `\\d` -> `[0-9]`, `\\s` -> `[[:space:]]`, and escapes inside `[...]` (ERE takes a
    backslash there literally)."""
    out = []
    i, n = 0, len(p)
    while i < n:
        c = p[i]
        if c == "\\" and i + 1 < n:
            d = p[i + 1]
            out.append({"d": "[0-9]", "s": "[[:space:]]"}.get(d, c + d))
            i += 2
        elif c == "[":
            text, i = _ere_class(p, i)
            out.append(text)
        elif p.startswith("(?:", i):
            out.append("(")
            i += 3
        else:
            out.append(c)
            i += 1
    return "".join(out)


def check_grep(grep: str, pats: list[str]) -> list[tuple[str, str]]:
    """Patterns GNU grep -E rejects or warns about (a warning means it reads the pattern differently)."""
    bad = []
    env = {**os.environ, "LC_ALL": "C"}
    for p in pats:
        r = subprocess.run([grep, "-E", "-q", "-e", p, os.devnull], capture_output=True, text=True, env=env)
        if r.returncode == 2 or r.stderr.strip():
            bad.append((p, (r.stderr.strip().splitlines() or ["error"])[-1]))
    return bad


# ----------------------------------------------------------------------------- detection


def load_findings(path: Path) -> list[dict]:
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if line.startswith("{"):
                rec = json.loads(line)
                if "line" in rec:  # a finding; a log's verdict record (`"kind": "verdict"`) is not graded
                    out.append(rec)
    return out


def _covers(f: dict, line: int) -> bool:
    return f["line"] <= line <= f["end_line"] or line in (f.get("lines") or ())


def grade(manifest: dict, findings: list[dict], ledger_size: int) -> dict:
    """Match injected failures to findings by position (and worker when the manifest names one)."""
    by_start = sorted(findings, key=lambda f: f["line"])
    found, missed, skipped, wrong_family, partial, overrun = [], [], [], [], [], []
    used: set[int] = set()
    for e in manifest["injected"]:
        if e["needs_ledger"] and ledger_size == 0:
            skipped.append(e)
            continue
        cands = [i for i, f in enumerate(by_start) if _covers(f, e["line"])]
        if e["worker"] is not None:
            # interleaved ranks: another rank's finding spans this line too; it does not count
            same = [i for i in cands if by_start[i].get("worker") == e["worker"]]
            cands = same or [i for i in cands if by_start[i].get("worker") is None]
        if not cands:
            missed.append(e)
            continue
        # prefer the finding of the expected family, then the one that also covers the key line
        cands.sort(key=lambda i: (by_start[i]["family"] != e["family"], not _covers(by_start[i], e["key_line"])))
        i = cands[0]
        f = by_start[i]
        used.add(i)
        rec = {**e, "got_family": f["family"], "got_line": f["line"], "got_end_line": f["end_line"],
               "got_worker": f.get("worker")}
        found.append(rec)
        if f["end_line"] > e["end_line"]:
            overrun.append(rec)
        if not _covers(f, e["key_line"]):
            partial.append(rec)
        if ledger_size and f["family"] != e["family"]:
            wrong_family.append(rec)
    spans = [(e.get("group_line", e["line"]), e.get("group_end_line", e["end_line"])) for e in manifest["injected"]]
    inside = [any(a <= f["end_line"] and f["line"] <= b for a, b in spans) for f in by_start]
    extra = [f for i, f in enumerate(by_start) if i not in used and not inside[i]]
    # a second finding inside one injected failure: a fragment or a duplicate of it
    fragments = [f for i, f in enumerate(by_start) if i not in used and inside[i]]
    return {"injected": len(manifest["injected"]), "graded": len(manifest["injected"]) - len(skipped),
            "found": len(found), "missed": missed, "skipped_no_ledger": skipped, "partial": partial,
            "family_agree": len(found) - len(wrong_family), "wrong_family": wrong_family,
            "findings": len(findings), "extra_findings": extra, "fragments": fragments, "overrun": overrun}


# ----------------------------------------------------------------------------- main


# ----------------------------------------------------------------------------- cases


CASES = ("realistic", "worst", "storm", "generated")


def case_log(case: str, size_mb: float, seed: int, every_mb: float | None) -> tuple[Path, dict]:
    """The case's log and manifest under bench/out/, generated when missing or made by another generator version."""
    if case == "generated":
        every = every_mb if every_mb is not None else 4.0
        log, version = gen_log.default_path(size_mb, seed, every), gen_log.GENERATOR_VERSION

        def make() -> dict:
            return gen_log.generate(log, size_mb, seed, every)
    else:
        every = every_mb if every_mb is not None else gen_realistic.EVERY_MB[case]
        log, version = gen_realistic.default_path(case, size_mb, seed), gen_realistic.GENERATOR_VERSION

        def make() -> dict:
            return gen_realistic.generate(log, size_mb, seed, case, every)
    man = gen_log.manifest_for(log)
    if log.exists() and man.exists():
        m = json.loads(man.read_text(encoding="utf-8"))
        if m.get("generator_version") == version and m.get("every_mb") == every:
            return log, m
    t0 = time.perf_counter()
    m = make()
    print(f"generated {log} ({m['bytes'] / MB:.1f} MB, {len(m['injected'])} injected failures) in "
          f"{time.perf_counter() - t0:.1f}s", file=sys.stderr)
    return log, m


def warm(path: Path) -> float:
    t0 = time.perf_counter()
    with open(path, "rb", buffering=0) as fh:
        while fh.read(16 << 20):
            pass
    return time.perf_counter() - t0


def tree_state() -> dict:
    """The commit of the checkout being measured, and whether the scanner or ledger has local edits."""
    repo = HERE.parent

    def git(*args: str) -> str:
        r = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
        return r.stdout if r.returncode == 0 else ""

    dirty = git("status", "--porcelain", "--", "classifier", "signatures")
    return {"commit": git("rev-parse", "--short", "HEAD").strip() or "?",
            "dirty": [ln[3:] for ln in dirty.splitlines() if len(ln) > 3]}


def loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def interpreter_beside(exe: str) -> str:
    """The Python that runs the `sigclass` script (its shebang), else this one."""
    try:
        with open(exe, "rb") as fh:
            first = fh.readline().decode("utf-8", "replace")
        if first.startswith("#!") and "python" in first:
            cand = first[2:].strip().split()[0]
            if os.access(cand, os.X_OK):
                return cand
    except OSError:
        pass
    return sys.executable


def engine_available(python: str) -> dict:
    """Which optional prefilter engines the interpreter running sigclass can import (not sigclass's own choice)."""
    have = {}
    for mod in ("hyperscan", "re2"):
        r = subprocess.run([python, "-c", f"import {mod}"], capture_output=True)
        have[mod] = r.returncode == 0
    return have


def pattern_hits(rg: str, pats: list[str], log: Path, top: int) -> list[tuple[int, str]]:
    counts = []
    for p in dict.fromkeys(pats):
        r = subprocess.run([rg, "-c", "--regexp", p, str(log)], capture_output=True, text=True)
        counts.append((int(r.stdout.strip() or 0), p))
    counts.sort(reverse=True)
    return counts[:top]


def _summ(size: int, rs: list[dict], stable: bool, cmd: list[str]) -> dict:
    walls = [r["wall"] for r in rs]
    med = statistics.median(walls)
    rss = [r["rss_kib"] for r in rs if r["rss_kib"]]
    cpus = [r["cpu"] for r in rs if r["cpu"] is not None]
    cpu_med = statistics.median(cpus) if cpus else None
    return {"median_s": round(med, 3), "mb_s": round(size / MB / med, 1), "best_s": round(min(walls), 3),
            "median_cpu_s": round(cpu_med, 3) if cpu_med is not None else None,
            "cpu_mb_s": round(size / MB / cpu_med, 1) if cpu_med else None,  # /usr/bin/time rounds to 0.01 s
            "walls": [round(w, 3) for w in walls], "peak_rss_mb": round(max(rss) / 1024, 1) if rss else None,
            "output_stable": stable, "cmd": " ".join(cmd)}


def measure(case: str, log: Path, manifest: dict, t: dict, a: argparse.Namespace, work: Path) -> dict:
    """Time every tool on one log (interleaved, page cache warm) and grade sigclass's findings against the manifest."""
    size = log.stat().st_size
    warm_s = warm(log)
    load_before = loadavg()
    findings_path = HERE / "out" / f"findings-{case}.jsonl"
    cmds = {  # name: (command, environment, accepted exit codes, stdout file)
        "sigclass": ([t["sigclass"], "scan", *t["sc_extra"], str(log)], t["env"], {0, 1}, work / "sigclass.out"),
        "sigclass-jsonl": ([t["sigclass"], "scan", "--format", "jsonl", *t["sc_extra"], str(log)], t["env"], {0, 1},
                           findings_path),
        "ripgrep": ([t["rg"], "-c", "-f", str(work / "rg.pat"), str(log)], t["env"], {0, 1}, work / "ripgrep.out"),
        "grep": ([t["grep"], "-E", "-c", "-f", str(work / "grep.pat"), str(log)], {**t["env"], "LC_ALL": "C"}, {0, 1},
                 work / "grep.out"),
    }
    names = list(cmds)
    runs: dict[str, list[dict]] = {n: [] for n in names}
    outputs: dict[str, list[bytes]] = {n: [] for n in names}
    # one untimed scan first: it fills the cache with what this log needs (compiled rule databases)
    subprocess.run(cmds["sigclass"][0], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=t["env"])
    for i in range(a.runs):
        for n in names[i % len(names):] + names[:i % len(names)]:  # rotate who goes first
            cmd, env, ok, out = cmds[n]
            r = run_timed(cmd, out, env, t["rss_method"], work)
            if r["rc"] not in ok:
                raise RuntimeError(f"{n} failed (exit {r['rc']}): {' '.join(cmd)}\n{r['stderr']}")
            runs[n].append(r)
            outputs[n].append(out.read_bytes())
    load_after = loadavg()
    res: dict = {"case": case, "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                 "log": str(log), "bytes": size, "lines": manifest["lines"], "runs": a.runs,
                 "page_cache_warm_s": round(warm_s, 2), "loadavg_before": load_before, "loadavg_after": load_after,
                 "tools": {n: _summ(size, runs[n], len(set(outputs[n])) == 1, cmds[n][0]) for n in names}}
    for n in ("ripgrep", "grep"):
        res["tools"][n]["matching_lines"] = int(outputs[n][-1].strip() or 0)
    res["pack_hit_share"] = round(res["tools"]["ripgrep"]["matching_lines"] / max(1, manifest["lines"]), 4)
    tl = res["tools"]
    res["ratio_sigclass_rg"] = round(tl["sigclass"]["mb_s"] / tl["ripgrep"]["mb_s"], 3)
    sc_cpu, rg_cpu = tl["sigclass"]["cpu_mb_s"], tl["ripgrep"]["cpu_mb_s"]
    res["ratio_sigclass_rg_cpu"] = round(sc_cpu / rg_cpu, 3) if sc_cpu and rg_cpu else None
    try:
        res["busy"] = max(float(load_before.split()[0]), float(load_after.split()[0])) > 0.5 * (os.cpu_count() or 1)
    except ValueError:
        res["busy"] = False
    g = grade(manifest, load_findings(findings_path), t["signatures"])
    res["detection"] = g
    rss = tl["sigclass"]["peak_rss_mb"]
    res["targets"] = {"ratio_ge_1": res["ratio_sigclass_rg"] >= TARGET_RATIO,
                      "rss_lt_100mb": rss is not None and rss < TARGET_RSS_MB, "all_found": not g["missed"]}
    if a.pattern_hits:
        res["pattern_hits"] = pattern_hits(t["rg"], t["rg_pats"], log, a.pattern_hits)
    return res


def startup(t: dict, a: argparse.Namespace, work: Path) -> dict:
    """Whole-process start-up: `sigclass scan` of a ~0.1 MB log beside `python -c pass` and `rg` on the same log."""
    small, _ = case_log("realistic", 0.1, a.seed, None)
    warm(small)
    py = t["python"]
    cmds = {"python -c pass": ([py, "-c", "pass"], t["env"]),
            "sigclass --version": ([t["sigclass"], "--version"], t["env"]),
            "sigclass scan small.log": ([t["sigclass"], "scan", *t["sc_extra"], str(small)], t["env"]),
            "rg -c -f PATTERNS small.log": ([t["rg"], "-c", "-f", str(work / "rg.pat"), str(small)], t["env"])}
    runs: dict[str, list[dict]] = {n: [] for n in cmds}
    for i in range(a.startup_runs):
        names = list(cmds)
        for n in names[i % len(names):] + names[:i % len(names)]:
            cmd, env = cmds[n]
            r = run_timed(cmd, work / "startup.out", env, t["rss_method"], work)
            if r["rc"] not in (0, 1):
                raise RuntimeError(f"{n} failed (exit {r['rc']}): {' '.join(cmd)}\n{r['stderr']}")
            runs[n].append(r)
    out = {"log": str(small), "bytes": small.stat().st_size, "runs": a.startup_runs, "tools": {}}
    for n, rs in runs.items():
        walls = sorted(r["wall"] for r in rs)
        rss = [r["rss_kib"] for r in rs if r["rss_kib"]]
        out["tools"][n] = {"median_ms": round(1000 * statistics.median(walls), 1), "min_ms": round(1000 * walls[0], 1),
                           "max_ms": round(1000 * walls[-1], 1), "peak_rss_mb": round(max(rss) / 1024, 1) if rss else None,
                           "cmd": " ".join(cmds[n][0])}
    base = out["tools"]["python -c pass"]["median_ms"]
    out["sigclass_over_python_ms"] = round(out["tools"]["sigclass scan small.log"]["median_ms"] - base, 1)
    return out


# ----------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=",".join(CASES),
                    help=f"comma-separated cases to time, of {', '.join(CASES)}; default all")
    ap.add_argument("--log", type=Path, help="time this log instead (its manifest, <log>.manifest.json, must be beside it)")
    ap.add_argument("--size-mb", type=float, default=300.0, help="size of the realistic log in MB; default 300")
    ap.add_argument("--other-mb", type=float, default=50.0,
                    help="size of the worst, storm and generated logs in MB; default 50")
    ap.add_argument("--seed", type=int, default=1, help="generator seed; default 1")
    ap.add_argument("--every-mb", type=float,
                    help="mean spacing of injected failures, MB (default: by case; realistic, worst, generated 4, storm 0.004)")
    ap.add_argument("--runs", type=int, default=3, help="timed runs per tool (median reported); default 3")
    ap.add_argument("--startup-runs", type=int, default=11, help="runs of each start-up command; default 11 (0: skip)")
    ap.add_argument("--engine", help="pass --engine to sigclass (hyperscan, re2, regex); default: its own choice")
    ap.add_argument("--signatures", choices=("regex", "both", "learned"),
                    help="pass --signatures to sigclass; default: none (its default)")
    ap.add_argument("--pattern-hits", type=int, default=0, metavar="N",
                    help="also list the N patterns matching the most lines (one rg run per pattern)")
    ap.add_argument("--no-db-cache", action="store_true", help="run sigclass with its compiled-database cache off")
    ap.add_argument("--json", action="store_true", help="print one JSON document instead of the tables")
    a = ap.parse_args(argv)
    cases = [c.strip() for c in a.cases.split(",") if c.strip()]
    bad = [c for c in cases if c not in CASES]
    if bad or not cases:
        print(f"--cases: unknown case(s) {', '.join(bad) or '(none given)'}; choose from {', '.join(CASES)}",
              file=sys.stderr)
        return 2
    if a.runs < 1 or a.startup_runs < 0:
        print("--runs must be at least 1 and --startup-runs at least 0", file=sys.stderr)
        return 2

    sigclass, rg, grep = tool_path("sigclass"), tool_path("rg"), shutil.which("grep")
    missing = [n for n, p in (("sigclass", sigclass), ("rg", rg), ("grep", grep)) if not p]
    if missing:
        print(f"not found on PATH: {', '.join(missing)} (pip install -e '.[bench]' gives rg)", file=sys.stderr)
        return 2
    env = dict(os.environ)
    # An installed wheel has its modules compiled to bytecode when pip installs it; with
    # PYTHONDONTWRITEBYTECODE set (some images set it) an editable install compiles ~60 modules again at every
    # start (~60 ms of a small scan). The timed commands run without it, so the warm-up run writes the bytecode
    # and the start-up figure is an installed package's; the header says when it was unset.
    bytecode_unset = env.pop("PYTHONDONTWRITEBYTECODE", None) is not None
    if a.no_db_cache:
        env["SIGCLASS_CACHE_DIR"] = "off"
    elif "SIGCLASS_CACHE_DIR" not in env:
        # a cache folder of the benchmark's own: on a machine where other programs run sigclass with other
        # ledgers (test suites make dozens), the user cache keeps only the newest few compiled databases, and a
        # timed run would sometimes pay for compiling them again
        env["SIGCLASS_CACHE_DIR"] = str(HERE / "out" / "cache")
    pat_res = subprocess.run([sigclass, "ledger", "patterns"], capture_output=True, text=True, env=env)
    list_res = subprocess.run([sigclass, "ledger", "list"], capture_output=True, text=True, env=env)
    if pat_res.returncode != 0 or list_res.returncode != 0:
        print(f"`sigclass ledger patterns` or `sigclass ledger list` failed:\n{pat_res.stderr}{list_res.stderr}",
              file=sys.stderr)
        return 2
    pats = [p for p in pat_res.stdout.splitlines() if p]
    rg_bad = check_rg(rg, pats)
    rg_pats = [p for p in pats if p not in {b for b, _ in rg_bad}]
    ere = [to_ere(p) for p in pats]
    rewritten = [(p, q) for p, q in zip(pats, ere) if p != q]
    grep_bad = check_grep(grep, ere)
    grep_pats = [q for q in ere if q not in {b for b, _ in grep_bad}]
    python = interpreter_beside(sigclass)
    t = {"sigclass": sigclass, "rg": rg, "grep": grep, "env": env, "rss_method": rss_method(), "python": python,
         "rg_pats": rg_pats, "signatures": len([ln for ln in list_res.stdout.splitlines() if ln.strip()]),
         "sc_extra": [*(["--signatures", a.signatures] if a.signatures else []),
                      *(["--engine", a.engine] if a.engine else [])]}

    work = Path(tempfile.mkdtemp(prefix="sigclass-bench-"))
    (HERE / "out").mkdir(exist_ok=True)
    (work / "rg.pat").write_text("\n".join(rg_pats) + "\n", encoding="utf-8")
    (work / "grep.pat").write_text("\n".join(grep_pats) + "\n", encoding="utf-8")
    doc: dict = {"machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
                 "tree": tree_state(), "rss_method": t["rss_method"], "engine": a.engine or "sigclass's default",
                 "engines_importable": engine_available(python), "signatures": t["signatures"],
                 "patterns": len(pats), "patterns_unique": len(set(pats)), "rg_rejected": rg_bad,
                 "grep_rewritten": len(rewritten), "grep_rejected": grep_bad, "bytecode_unset": bytecode_unset,
                 "cases": []}
    try:
        if a.log:
            man = gen_log.manifest_for(a.log)
            if not a.log.is_file() or not man.is_file():
                print(f"{a.log}: the log or its manifest ({man.name}) is missing; cannot grade detection",
                      file=sys.stderr)
                return 2
            try:
                given = json.loads(man.read_text(encoding="utf-8"))
                if not isinstance(given.get("injected"), list) or "lines" not in given:
                    raise ValueError("no `injected` list or `lines` count")
            except ValueError as e:  # json.JSONDecodeError is a ValueError
                print(f"{man}: not a manifest written by gen_log.py or gen_realistic.py ({e}); "
                      "generate the log with one of them", file=sys.stderr)
                return 2
            todo = [("given", a.log, given)]
        else:
            todo = [(c, *case_log(c, a.size_mb if c == "realistic" else a.other_mb, a.seed, a.every_mb)) for c in cases]
        for case, log, manifest in todo:
            doc["cases"].append(measure(case, log, manifest, t, a, work))
            if not a.json:
                print_table(doc, doc["cases"][-1])
        if a.startup_runs:
            doc["startup"] = startup(t, a, work)
    except RuntimeError as e:
        print(str(e), file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if a.json:
        print(json.dumps(doc, indent=1, default=str))
    else:
        print_summary(doc)
    return 1 if any(c["detection"]["missed"] for c in doc["cases"]) else 0


def print_table(doc: dict, r: dict) -> None:
    w = print
    w(f"=== case {r['case']}: {r['log']}  {r['bytes'] / MB:.1f} MB, {r['lines']:,} lines; page cache warmed "
      f"({r['page_cache_warm_s']}s read)")
    w(f"machine  {doc['machine']}; {r['date']}; median of {r['runs']} run(s), whole-process wall time; "
      f"load avg {r['loadavg_before']} -> {r['loadavg_after']}")
    t = doc["tree"]
    w(f"tree     commit {t['commit']}" + (f", local edits in {', '.join(t['dirty'])}" if t["dirty"] else ", clean"))
    if doc.get("bytecode_unset"):
        w("python   PYTHONDONTWRITEBYTECODE unset for the timed commands (bytecode written once, as an install does)")
    eng = ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in doc["engines_importable"].items())
    w(f"ledger   {doc['signatures']} signatures; {doc['patterns']} patterns, {doc['patterns_unique']} unique; "
      f"engine: {doc['engine']} (importable: {eng})")
    w("")
    w(f"{'tool':15} {'median s':>9} {'MB/s':>8} {'x rg':>6} {'best s':>7} {'peak RSS':>10} {'CPU s':>7}  runs (s)")
    rg = r["tools"]["ripgrep"]["mb_s"]
    for n, x in r["tools"].items():
        rss = f"{x['peak_rss_mb']:.1f} MB" if x["peak_rss_mb"] is not None else "-"
        cpu = f"{x['median_cpu_s']:.2f}" if x["median_cpu_s"] is not None else "-"
        w(f"{n:15} {x['median_s']:9.3f} {x['mb_s']:8.1f} {x['mb_s'] / rg:6.2f} {x['best_s']:7.3f} {rss:>10} {cpu:>7}  "
          f"{', '.join(f'{v:.2f}' for v in x['walls'])}{'' if x['output_stable'] else '  (output differed between runs!)'}")
    w("")
    w(f"ratio sigclass/ripgrep = {r['ratio_sigclass_rg']:.2f}  (target >= {TARGET_RATIO})   "
      f"sigclass peak RSS = {r['tools']['sigclass']['peak_rss_mb']} MB via {doc['rss_method']}  "
      f"(target < {TARGET_RSS_MB:.0f} MB)")
    if r["ratio_sigclass_rg_cpu"] is not None:
        w(f"by CPU time (user+sys): sigclass {r['tools']['sigclass']['cpu_mb_s']} MB/s, ripgrep "
          f"{r['tools']['ripgrep']['cpu_mb_s']} MB/s, ratio {r['ratio_sigclass_rg_cpu']:.2f}")
    if r["busy"]:
        w("WARNING: the machine was busy (load average above half the CPUs): wall-time figures are unreliable; "
          "the CPU-time ratio is steadier")
    w(f"lines matching the pack: ripgrep {r['tools']['ripgrep']['matching_lines']:,} "
      f"({100 * r['pack_hit_share']:.2f}% of lines), grep {r['tools']['grep']['matching_lines']:,}")
    if doc["rg_rejected"]:
        w(f"ripgrep rejected {len(doc['rg_rejected'])} pattern(s), dropped for ripgrep only:")
        for p, m in doc["rg_rejected"]:
            w(f"   {p!r}: {m}")
    w(f"grep: {doc['grep_rewritten']} pattern(s) rewritten to ERE; "
      + (f"{len(doc['grep_rejected'])} rejected and dropped for grep" if doc["grep_rejected"] else "none rejected"))
    d = r["detection"]
    w("")
    w(f"injected failures: {d['found']}/{d['graded']} found, {len(d['missed'])} missed"
      + (f", {len(d['skipped_no_ledger'])} not graded (need ledger patterns; the ledger is empty)" if d["skipped_no_ledger"] else "")
      + f"; {d['findings']} findings, {len(d['extra_findings'])} outside any injected failure")
    for e in d["missed"][:10]:
        w(f"   MISSED line {e['line']} (key {e['key_line']}) {e['family']} worker={e['worker']}: {e['what']}")
    for e in d["partial"][:10]:
        w(f"   partial: line {e['line']} found as {e['got_line']}-{e['got_end_line']} but the key line {e['key_line']} "
          f"is outside it ({e['what']})")
    if d["overrun"]:
        over = sorted(e["got_end_line"] - e["end_line"] for e in d["overrun"])
        w(f"{len(d['overrun'])} finding(s) run past the end of their injected failure (took in following lines): "
          f"by {over[0]}-{over[-1]} lines, median {over[len(over) // 2]}")
    w(f"family agrees with the manifest: {d['family_agree']}/{d['found']}")
    wrong = Counter((e["family"], e["got_family"], e["what"]) for e in d["wrong_family"])
    for (want, got, what), n in wrong.most_common(10):
        w(f"   {n} x expected {want}, got {got} ({what})")
    if d["fragments"]:
        w(f"{len(d['fragments'])} more finding(s) inside injected failures (a fragment, a duplicate or a cascade): "
          + ", ".join(f"{f} x{n}" for f, n in Counter(f["family"] for f in d["fragments"]).most_common()))
    if d["extra_findings"]:
        w(f"findings outside every injected failure, by family: "
          + ", ".join(f"{f} x{n}" for f, n in Counter(f["family"] for f in d["extra_findings"]).most_common()))
        for f in d["extra_findings"][:5]:
            w(f"   extra: line {f['line']}-{f['end_line']} {f['family']}: {(f.get('evidence') or [''])[-1][:100]}")
    if r.get("pattern_hits"):
        w("")
        w("patterns matching the most lines (ripgrep -c per pattern):")
        for c, p in r["pattern_hits"]:
            w(f"   {c:9,}  {c / (r['bytes'] / MB):8.1f}/MB  {p}")
    w("targets: " + ", ".join(f"{k} {'PASS' if v else 'FAIL'}" for k, v in r["targets"].items()))
    w("")


def print_summary(doc: dict) -> None:
    w = print
    w("=== summary (median wall time; x rg = sigclass MB/s over ripgrep MB/s on the same file in the same run)")
    w(f"{'case':10} {'MB':>6} {'hits %':>7} {'sigclass':>9} {'jsonl':>8} {'ripgrep':>8} {'grep':>8} {'x rg':>6} "
      f"{'x rg CPU':>8} {'RSS MB':>7} {'found':>11} {'family ok':>10} {'extra':>6}")
    for r in doc["cases"]:
        tl, d = r["tools"], r["detection"]
        cpu = f"{r['ratio_sigclass_rg_cpu']:.2f}" if r["ratio_sigclass_rg_cpu"] is not None else "-"
        w(f"{r['case']:10} {r['bytes'] / MB:6.0f} {100 * r['pack_hit_share']:7.2f} {tl['sigclass']['mb_s']:9.1f} "
          f"{tl['sigclass-jsonl']['mb_s']:8.1f} {tl['ripgrep']['mb_s']:8.1f} {tl['grep']['mb_s']:8.1f} "
          f"{r['ratio_sigclass_rg']:6.2f} {cpu:>8} {tl['sigclass']['peak_rss_mb'] or 0:7.1f} "
          f"{d['found']:>5}/{d['graded']:<5} {d['family_agree']:>5}/{d['found']:<4} {len(d['extra_findings']):6}")
    w("(MB/s columns; hits % = lines matching a ledger pattern; RSS = sigclass's peak)")
    if doc.get("startup"):
        s = doc["startup"]
        w("")
        w(f"start-up, median of {s['runs']} runs on a {s['bytes'] / 1000:.0f} kB log (min-max):")
        for n, x in s["tools"].items():
            w(f"   {n:28} {x['median_ms']:8.1f} ms  ({x['min_ms']:.1f}-{x['max_ms']:.1f})  RSS {x['peak_rss_mb']} MB")
        w(f"   sigclass scan over python -c pass: {s['sigclass_over_python_ms']:.1f} ms")


if __name__ == "__main__":
    sys.exit(main())
