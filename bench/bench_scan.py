"""Scan benchmark: sigclass against ripgrep and GNU grep on one large generated log.

Generates the log if missing (bench/gen_log.py), reads it once to warm the
page cache, then, in the same run and interleaved, times whole processes:

    sigclass scan --format jsonl [--signatures both] LOG   (stdout to a file)
    rg -c -f PATTERNS LOG
    LC_ALL=C grep -E -c -f PATTERNS LOG

PATTERNS is the output of `sigclass ledger patterns`. Patterns ripgrep rejects
are dropped for ripgrep (and named). GNU grep has no `(?:...)`, `\\d` or `\\s`:
those are rewritten to their ERE equivalents (named in the output), and any
pattern grep still rejects or warns about is dropped for grep (and named).

Reports the median wall time of N runs as MB/s (MB = 10^6 bytes), the ratio
sigclass/ripgrep, sigclass's peak RSS, the prefilter engine, and whether every
injected failure in the manifest was found (a finding whose [line, end_line]
covers the failure's first line, of the same worker when the manifest names
one). Exit status: 0 all found, 1 some injected failure missed, 2 a tool failed.

    python bench/bench_scan.py                 # 300 MB, 3 runs
    python bench/bench_scan.py --runs 5 --json
    python bench/bench_scan.py --size-mb 1000 --runs 1   # RSS does not grow with input
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
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gen_log  # noqa: E402

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
                out.append(json.loads(line))
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


def engine_info(engine: str | None) -> dict:
    """Build the scanner the way `sigclass scan --signatures regex` does and ask which engine it got."""
    import warnings

    from sigclass.ledger.pack import load_ledger
    from sigclass.scan.scanner import Scanner

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lg = load_ledger([])
        sc = Scanner(lg, engine=engine, signatures="regex")
    eng = sc.engine
    slow = getattr(getattr(eng, "slow", None), "items", [])
    return {"engine": eng.name, "signatures": len(list(lg)),
            "slow_path_patterns": [label for _, _, label in slow] if eng.name != "regex" else "all",
            "warnings": [str(w.message) for w in caught]}


def pattern_hits(rg: str, pats: list[str], log: Path, top: int) -> list[tuple[int, str]]:
    counts = []
    for p in dict.fromkeys(pats):
        r = subprocess.run([rg, "-c", "--regexp", p, str(log)], capture_output=True, text=True)
        counts.append((int(r.stdout.strip() or 0), p))
    counts.sort(reverse=True)
    return counts[:top]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log", type=Path, help="log to scan (default: bench/out/scan-<size>mb-s<seed>.log, generated if missing)")
    ap.add_argument("--size-mb", type=float, default=300.0, help="size of the generated log in MB; default 300")
    ap.add_argument("--seed", type=int, default=1, help="generator seed; default 1")
    ap.add_argument("--every-mb", type=float, default=4.0,
                    help="mean spacing of injected failures in the generated log, MB; default 4 (0.02 is a failure storm)")
    ap.add_argument("--runs", type=int, default=3, help="timed runs per tool (median reported); default 3")
    ap.add_argument("--engine", help="pass --engine to sigclass (hyperscan, re2, regex); default: its own choice")
    ap.add_argument("--signatures", default="both", choices=("regex", "both", "learned"),
                    help="sigclass --signatures; default both (what a user runs)")
    ap.add_argument("--pattern-hits", type=int, default=0, metavar="N",
                    help="also list the N patterns matching the most lines (one rg run per pattern)")
    ap.add_argument("--no-db-cache", action="store_true", help="run sigclass with its compiled-database cache off")
    ap.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    a = ap.parse_args(argv)

    log = a.log or gen_log.default_path(a.size_mb, a.seed, a.every_mb)
    man_path = gen_log.manifest_for(log)
    if not log.exists() or not man_path.exists():
        if a.log and log.exists():
            print(f"{log}: no manifest beside it ({man_path.name}); cannot grade detection", file=sys.stderr)
            return 2
        t0 = time.perf_counter()
        gen_log.generate(log, a.size_mb, a.seed, a.every_mb)
        print(f"generated {log} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    manifest = json.loads(man_path.read_text(encoding="utf-8"))
    if not a.log and manifest.get("generator_version") != gen_log.GENERATOR_VERSION:
        print(f"{log}: made by an older generator; generating it again", file=sys.stderr)
        manifest = gen_log.generate(log, a.size_mb, a.seed, a.every_mb)
    size = log.stat().st_size

    sigclass, rg, grep = tool_path("sigclass"), tool_path("rg"), shutil.which("grep")
    missing = [n for n, p in (("sigclass", sigclass), ("rg", rg), ("grep", grep)) if not p]
    if missing:
        print(f"not found on PATH: {', '.join(missing)} (pip install -e '.[bench]' gives rg)", file=sys.stderr)
        return 2

    env = dict(os.environ)
    if a.no_db_cache:
        env["SIGCLASS_CACHE_DIR"] = "off"
    pat_res = subprocess.run([sigclass, "ledger", "patterns"], capture_output=True, text=True, env=env)
    if pat_res.returncode != 0:
        print(f"`sigclass ledger patterns` failed:\n{pat_res.stderr}", file=sys.stderr)
        return 2
    pats = [p for p in pat_res.stdout.splitlines() if p]
    rg_bad = check_rg(rg, pats)
    rg_pats = [p for p in pats if p not in {b for b, _ in rg_bad}]
    ere = [to_ere(p) for p in pats]
    rewritten = [(p, q) for p, q in zip(pats, ere) if p != q]
    grep_bad = check_grep(grep, ere)
    grep_pats = [q for q in ere if q not in {b for b, _ in grep_bad}]

    info = engine_info(a.engine)
    work = Path(tempfile.mkdtemp(prefix="sigclass-bench-"))
    out_dir = HERE / "out"
    out_dir.mkdir(exist_ok=True)
    (work / "rg.pat").write_text("\n".join(rg_pats) + "\n", encoding="utf-8")
    (work / "grep.pat").write_text("\n".join(grep_pats) + "\n", encoding="utf-8")

    # warm the page cache
    t0 = time.perf_counter()
    with open(log, "rb", buffering=0) as fh:
        while fh.read(16 << 20):
            pass
    warm_s = time.perf_counter() - t0

    method = rss_method()
    load_before = loadavg()
    sc_cmd = [sigclass, "scan", "--format", "jsonl", "--signatures", a.signatures, *(["--engine", a.engine] if a.engine else []),
              str(log)]
    cmds = {
        "sigclass": (sc_cmd, env, {0, 1}),
        "ripgrep": ([rg, "-c", "-f", str(work / "rg.pat"), str(log)], env, {0, 1}),
        "grep": ([grep, "-E", "-c", "-f", str(work / "grep.pat"), str(log)], {**env, "LC_ALL": "C"}, {0, 1}),
    }
    names = list(cmds)
    runs: dict[str, list[dict]] = {n: [] for n in names}
    outputs: dict[str, list[bytes]] = {n: [] for n in names}
    for i in range(a.runs):
        order = names[i % len(names):] + names[:i % len(names)]  # rotate who goes first
        for n in order:
            cmd, e, ok = cmds[n]
            out = (out_dir / "findings.jsonl") if n == "sigclass" else (work / f"{n}.out")
            r = run_timed(cmd, out, e, method, work)
            if r["rc"] not in ok:
                print(f"{n} failed (exit {r['rc']}): {' '.join(cmd)}\n{r['stderr']}", file=sys.stderr)
                return 2
            runs[n].append(r)
            outputs[n].append(out.read_bytes())
    stable = {n: len(set(outputs[n])) == 1 for n in names}
    load_after = loadavg()

    res: dict = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "log": str(log), "bytes": size, "lines": manifest["lines"], "runs": a.runs, "page_cache_warm_s": round(warm_s, 2),
        "tree": tree_state(), "loadavg_before": load_before, "loadavg_after": load_after,
        "rss_method": method, "patterns": len(pats), "patterns_unique": len(set(pats)),
        "rg_rejected": rg_bad, "grep_rewritten": len(rewritten), "grep_rejected": grep_bad,
        **info, "tools": {},
    }
    for n in names:
        walls = [r["wall"] for r in runs[n]]
        med = statistics.median(walls)
        rss = [r["rss_kib"] for r in runs[n] if r["rss_kib"]]
        cpus = [r["cpu"] for r in runs[n] if r["cpu"] is not None]
        res["tools"][n] = {"median_s": round(med, 3), "mb_s": round(size / MB / med, 1), "best_s": round(min(walls), 3),
                           "median_cpu_s": round(statistics.median(cpus), 3) if cpus else None,
                           "cpu_mb_s": round(size / MB / statistics.median(cpus), 1) if cpus else None,
                           "walls": [round(w, 3) for w in walls],
                           "peak_rss_mb": round(max(rss) / 1024, 1) if rss else None,
                           "output_stable": stable[n], "cmd": " ".join(cmds[n][0])}
    res["tools"]["ripgrep"]["matching_lines"] = int(outputs["ripgrep"][-1].strip() or 0)
    res["tools"]["grep"]["matching_lines"] = int(outputs["grep"][-1].strip() or 0)
    ratio = res["tools"]["sigclass"]["mb_s"] / res["tools"]["ripgrep"]["mb_s"]
    res["ratio_sigclass_rg"] = round(ratio, 3)
    sc_cpu, rg_cpu = res["tools"]["sigclass"]["cpu_mb_s"], res["tools"]["ripgrep"]["cpu_mb_s"]
    res["ratio_sigclass_rg_cpu"] = round(sc_cpu / rg_cpu, 3) if sc_cpu and rg_cpu else None
    try:
        res["busy"] = max(float(load_before.split()[0]), float(load_after.split()[0])) > 0.5 * (os.cpu_count() or 1)
    except ValueError:
        res["busy"] = False
    findings = load_findings(out_dir / "findings.jsonl")
    g = grade(manifest, findings, info["signatures"])
    res["detection"] = g
    rss = res["tools"]["sigclass"]["peak_rss_mb"]
    res["targets"] = {"ratio_ge_1": ratio >= TARGET_RATIO, "rss_lt_100mb": rss is not None and rss < TARGET_RSS_MB,
                      "all_found": not g["missed"]}
    if a.pattern_hits:
        res["pattern_hits"] = pattern_hits(rg, rg_pats, log, a.pattern_hits)

    if a.json:
        print(json.dumps(res, indent=1, default=str))
    else:
        print_table(res)
    shutil.rmtree(work, ignore_errors=True)
    return 1 if g["missed"] else 0


def print_table(r: dict) -> None:
    w = print
    w(f"log      {r['log']}  {r['bytes'] / MB:.1f} MB, {r['lines']:,} lines; page cache warmed ({r['page_cache_warm_s']}s read)")
    w(f"machine  {r['machine']}; {r['date']}; median of {r['runs']} run(s), whole-process wall time; "
      f"load avg {r['loadavg_before']} -> {r['loadavg_after']}")
    t = r["tree"]
    w(f"tree     commit {t['commit']}" + (f", local edits in {', '.join(t['dirty'])}" if t["dirty"] else ", clean"))
    w(f"engine   {r['engine']} ({r['signatures']} signatures; {r['patterns']} patterns, {r['patterns_unique']} unique; "
      f"slow path: {r['slow_path_patterns'] if r['slow_path_patterns'] == 'all' else len(r['slow_path_patterns'])})")
    if r["slow_path_patterns"] and r["slow_path_patterns"] != "all":
        for s in r["slow_path_patterns"]:
            w(f"         slow-path pattern: {s}")
    w("")
    w(f"{'tool':10} {'median s':>9} {'MB/s':>8} {'x rg':>6} {'best s':>7} {'peak RSS':>10} {'CPU s':>7}  runs (s)")
    rg = r["tools"]["ripgrep"]["mb_s"]
    for n, t in r["tools"].items():
        rss = f"{t['peak_rss_mb']:.1f} MB" if t["peak_rss_mb"] is not None else "-"
        cpu = f"{t['median_cpu_s']:.2f}" if t["median_cpu_s"] is not None else "-"
        w(f"{n:10} {t['median_s']:9.3f} {t['mb_s']:8.1f} {t['mb_s'] / rg:6.2f} {t['best_s']:7.3f} {rss:>10} {cpu:>7}  "
          f"{', '.join(f'{x:.2f}' for x in t['walls'])}{'' if t['output_stable'] else '  (output differed between runs!)'}")
    w("")
    w(f"ratio sigclass/ripgrep = {r['ratio_sigclass_rg']:.2f}  (target >= {TARGET_RATIO})   "
      f"sigclass peak RSS = {r['tools']['sigclass']['peak_rss_mb']} MB via {r['rss_method']}  (target < {TARGET_RSS_MB:.0f} MB)")
    if r["ratio_sigclass_rg_cpu"] is not None:
        w(f"by CPU time (user+sys): sigclass {r['tools']['sigclass']['cpu_mb_s']} MB/s, ripgrep "
          f"{r['tools']['ripgrep']['cpu_mb_s']} MB/s, ratio {r['ratio_sigclass_rg_cpu']:.2f}")
    if r["busy"]:
        w("WARNING: the machine was busy (load average above half the CPUs): wall-time figures are unreliable; "
          "the CPU-time ratio is steadier")
    w(f"lines matching the pack: ripgrep {r['tools']['ripgrep']['matching_lines']:,}, grep {r['tools']['grep']['matching_lines']:,}")
    if r["rg_rejected"]:
        w(f"ripgrep rejected {len(r['rg_rejected'])} pattern(s), dropped for ripgrep only:")
        for p, m in r["rg_rejected"]:
            w(f"   {p!r}: {m}")
    else:
        w("ripgrep accepted every pattern")
    w(f"grep: {r['grep_rewritten']} pattern(s) rewritten to ERE ((?:...) -> (...), \\d -> [0-9], \\s -> [[:space:]], "
      f"\\n dropped inside [...]); " + (f"{len(r['grep_rejected'])} rejected and dropped for grep:" if r["grep_rejected"]
                                         else "none rejected"))
    for p, m in r["grep_rejected"]:
        w(f"   {p!r}: {m}")
    d = r["detection"]
    w("")
    w(f"injected failures: {d['found']}/{d['graded']} found, {len(d['missed'])} missed"
      + (f", {len(d['skipped_no_ledger'])} not graded (need ledger patterns; the ledger is empty)" if d["skipped_no_ledger"] else "")
      + f"; {d['findings']} findings, {len(d['extra_findings'])} outside any injected failure")
    for e in d["missed"]:
        w(f"   MISSED line {e['line']} (key {e['key_line']}) {e['family']} worker={e['worker']}: {e['what']}")
    for e in d["partial"]:
        w(f"   partial: line {e['line']} found as {e['got_line']}-{e['got_end_line']} but the key line {e['key_line']} "
          f"is outside it ({e['what']})")
    if d["overrun"]:
        over = sorted(e["got_end_line"] - e["end_line"] for e in d["overrun"])
        w(f"{len(d['overrun'])} finding(s) run past the end of their injected failure (took in following lines): "
          f"by {over[0]}-{over[-1]} lines, median {over[len(over) // 2]}")
        for e in sorted(d["overrun"], key=lambda e: e["end_line"] - e["got_end_line"])[:5]:
            w(f"   line {e['line']}: failure ends at {e['end_line']}, finding at {e['got_end_line']} ({e['what']})")
    if r["signatures"]:
        w(f"family agrees with the manifest: {d['family_agree']}/{d['found']}")
        for e in d["wrong_family"]:
            w(f"   line {e['line']}: expected {e['family']}, got {e['got_family']} ({e['what']})")
    if d["fragments"]:
        w(f"{len(d['fragments'])} more finding(s) inside injected failures (a fragment or a duplicate of one):")
    for f in d["fragments"][:10]:
        w(f"   fragment: line {f['line']}-{f['end_line']} {f['family']}: {(f.get('evidence') or [''])[-1][:100]}")
    for f in d["extra_findings"][:10]:
        w(f"   extra: line {f['line']}-{f['end_line']} {f['family']}: {(f.get('evidence') or [''])[-1][:100]}")
    if r.get("pattern_hits"):
        w("")
        w("patterns matching the most lines (ripgrep -c per pattern):")
        for c, p in r["pattern_hits"]:
            w(f"   {c:9,}  {c / (r['bytes'] / MB):8.1f}/MB  {p}")
    t = r["targets"]
    w("")
    w("targets: " + ", ".join(f"{k} {'PASS' if v else 'FAIL'}" for k, v in t.items()))


if __name__ == "__main__":
    sys.exit(main())
