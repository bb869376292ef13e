"""From unknown failures to draft signatures.

`group_unknowns` scans files or run directories with the regex ledger and
groups the `unknown` findings by a masked template of the exception their
block raised (`authoring.template`; a block that raised none by its key
lines' fingerprint), ranked by spread (runs, then workers) and count.
`write_drafts` induces a regex from each top group's key line (literal text
escaped, masked tokens turned into tight character classes, no `\\b`, no
lookaround), guesses the role from the block, and writes a ledger file plus a
same-stem example file: members as `# expect:` excerpts, clean-corpus text as
`# expect-not:`. A draft that fails lint, misses a member or matches a clean
line is not kept, and the reason is reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import hashlib
from pathlib import Path
import re
from typing import Any, Iterable, Sequence
import warnings

import regex
import yaml

from sigclass.errors import InputError
from sigclass.runs.layouts import identify, is_source, run_of
from sigclass.authoring.template import exception_key, is_launcher_report, report_key, says_something
from sigclass.text.lines import mask, MASKS
from sigclass.vocab import Role, SignatureMode, Status

MAX_KEY_CHARS = 200
_SECONDARY_HINTS = re.compile(
    r"SIGTERM|SIGKILL|[Ss]ignal 15|ChildFailedError|[Ww]atchdog|EngineDead|died unexpectedly|ActorDied|RayActorError"
    r"|remote process exited|closing signal|[Bb]roken pipe|[Cc]onnection reset by peer|peer closed|because .* (?:died|failed)"
)
_STOP = {"a", "an", "the", "at", "of", "in", "on", "for", "to", "is", "was", "be", "and", "or", "with", "by", "from",
         "error", "failed", "num", "hex", "path", "id", "ip", "time", "uuid"}
_GENERIC_CLEAN = (
    "INFO 01-01 00:00:00 [engine.py:100] Starting engine with 1 worker",
    "[shard 1] starting: 128 prompts",
    "step 100/1000 loss=2.3412 lr=1.0e-04 grad_norm=0.91",
    "[shard 1] done: 128 prompts in 12.3s",
)


@dataclass
class Member:
    source: str
    line: int
    run: str
    worker: str
    key_line: str
    block: list[str]


@dataclass
class Group:
    fingerprint: str
    template: str
    members: list[Member] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.members)

    @property
    def runs(self) -> set[str]:
        return {m.run for m in self.members}

    @property
    def workers(self) -> set[tuple[str, str]]:
        return {(m.run, m.worker) for m in self.members}

    def to_dict(self) -> dict[str, Any]:
        return {"fingerprint": self.fingerprint, "template": self.template, "count": self.count,
                "runs": len(self.runs), "workers": len(self.workers),
                "members": [f"{m.source}:{m.line}" for m in self.members]}


@dataclass
class Draft:
    group: int
    id: str
    pattern: str
    role: str
    members: int
    path: str
    written: bool
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


# --------------------------------------------------------------------------- grouping

def _log_files(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*") if p.is_file() and is_source(p.name))


def sources(paths: Iterable[str | Path]) -> list[tuple[Path, str, str | None]]:
    """(file, run, worker-from-path) for every log source under the given files or run directories.

    A directory is one run, or a folder of runs; which it is, which files are
    sources and what their paths say of the worker is read by `runs.layouts`,
    the same rules `sigclass runs` follows.
    """
    from sigclass.runs.discover import plan_run

    out: list[tuple[Path, str, str | None]] = []
    for p in map(Path, paths):
        if p.is_file():
            rel = f"{p.parent.name}/{p.name}" if p.parent.name else p.name
            out.append((p, str(p.parent), identify(rel).worker))
        elif p.is_dir():
            for rel in plan_run(str(p)).sources:
                sub = run_of(rel)
                run = p if sub is None else p / sub
                inner = rel if sub is None else rel[len(sub) + 1:]
                out.append((p / rel, str(run), identify(inner).worker))
        else:
            raise InputError(f"{p}: no such file or directory; name log files or run directories")
    return out


def _template_id(template: str) -> str:
    """A group's id: a hash of its template as it is (already masked where a token varies; an exit code is kept)."""
    return hashlib.sha1(template.encode("utf-8", "replace")).hexdigest()[:12]


def group_unknowns(paths: Iterable[str | Path], ledger) -> list[Group]:
    from sigclass.scan.scanner import Scanner

    scanner = Scanner(ledger, signatures=SignatureMode.REGEX)
    groups: dict[str, Group] = {}

    def join(gid: str, template: str, member: Member) -> str:
        g = groups.get(gid)
        if g is None:
            g = groups[gid] = Group(gid, template)
        g.members.append(member)
        return gid

    for f, run, pworker in sources(paths):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                res = scanner.scan(str(f))
            except InputError:
                continue
        own: str | None = None  # the group of the source's first failure that says what it is
        later: list[tuple[Member, str, str]] = []  # what only reports a failure, or says nothing: decided below
        for fd in res.findings:
            if fd.family != "unknown" or not fd.evidence:
                continue
            block = fd.block or fd.evidence
            # the exception the block raised tells failures apart; its header often does not
            got = exception_key(block)
            said = not is_launcher_report(got[1]) if got is not None else says_something(block)
            if got is None and (report := report_key(fd.evidence[-1])) is not None:
                got, said = report, False  # a launcher's word that a worker failed: a report, it says nothing itself
            key_line, template = got if got else (fd.evidence[-1], " | ".join(mask(e) for e in fd.evidence[-2:]))
            gid = _template_id(template) if got else fd.fingerprint
            member = Member(res.source, fd.line, run, fd.worker or pworker or str(f), key_line, list(fd.block))
            if said:
                got_gid = join(gid, template, member)
                own = own or got_gid
            else:
                later.append((member, gid, template))
        # a launcher's summary of a failed child, or a traceback cut before it said anything, belongs to the failure
        # the same source shows; alone, it is a group of its own
        for member, gid, template in later:
            join(own or gid, groups[own].template if own else template, member)
    return sorted(groups.values(), key=lambda g: (-len(g.runs), -len(g.workers), -g.count, g.template))


# --------------------------------------------------------------------------- inducing a regex

def segments(text: str) -> list[tuple[str | None, str]]:
    """The text cut into literal runs (None) and masked tokens (their mask tag), in the masking order."""
    segs: list[tuple[str | None, str]] = [(None, text)]
    for rx, tag in MASKS:
        new: list[tuple[str | None, str]] = []
        for kind, s in segs:
            if kind is not None:
                new.append((kind, s))
                continue
            pos = 0
            for m in rx.finditer(s):
                if m.end() == m.start():
                    continue
                if m.start() > pos:
                    new.append((None, s[pos:m.start()]))
                new.append((tag, m.group()))
                pos = m.end()
            if pos < len(s):
                new.append((None, s[pos:]))
        segs = new
    return segs


def _literal(text: str) -> str:
    out = []
    for part in re.split(r"( +|\t+)", text):
        if not part:
            continue
        if part.isspace():
            out.append(" +" if " " in part else "[ \t]+")
        else:
            out.append(re.sub(r"([.^$*+?{}\[\]\\|()])", r"\\\1", part))
    return "".join(out)


def _token_class(tag: str, values: Sequence[str]) -> str:
    if tag == "<NUM>":
        if all(v.isdigit() for v in values):
            return "[0-9]+"
        return "[-+]?[0-9][0-9.,eE+-]*"
    if tag == "<HEX>":
        if all(v.startswith("0x") for v in values):
            return "0x[0-9a-fA-F]+"
        return "[0-9a-fA-F]+"
    if tag == "<IP>":
        return "[0-9]+[.][0-9]+[.][0-9]+[.][0-9]+(?::[0-9]+)?"
    if tag == "<UUID>":
        return "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    if tag == "<TIME>":
        return "[0-9][0-9:.,TZ+_ -]*"
    if tag == "<PATH>":
        extra = ":" if any(":" in v for v in values) else ""
        extra += "\\\\" if any("\\" in v for v in values) else ""
        return f"[A-Za-z0-9_./@+~{extra}-]+"
    if tag == "<ID>":
        heads = {re.match(r"[A-Za-z]+", v).group(0) if re.match(r"[A-Za-z]+", v) else "" for v in values}
        head = _literal(heads.pop()) if len(heads) == 1 else "[A-Za-z]+"
        return f"{head}[ =:_]?[0-9]+"
    return "[A-Za-z0-9_.-]+"


def induce(key_lines: Sequence[str]) -> str | None:
    """A regex that matches every key line: the shared literal text escaped, masked tokens as tight classes."""
    cut = [k.strip()[:MAX_KEY_CHARS] for k in key_lines if k.strip()]
    if not cut:
        return None
    segs = [segments(k) for k in cut]
    shape = [kind for kind, _ in segs[0]]
    parts: list[str] = []
    if all([kind for kind, _ in s] == shape for s in segs):
        for i, kind in enumerate(shape):
            vals = [s[i][1] for s in segs]
            if kind is None:
                if len(set(vals)) == 1:
                    parts.append(_literal(vals[0]))
                else:
                    # literal text differs between members (it was cut mid-token): keep the shared start only
                    common = _common_prefix(vals)
                    parts.append(_literal(common))
                    break
            else:
                parts.append(_token_class(kind, vals))
    else:
        parts.append(_literal(_common_prefix([mask(k) for k in cut]).split("<")[0]))
    pattern = "".join(parts).rstrip()
    while pattern.endswith(" +"):
        pattern = pattern[:-2]
    return pattern or None


def _common_prefix(vals: Sequence[str]) -> str:
    first = vals[0]
    n = len(first)
    for v in vals[1:]:
        n = min(n, len(v))
        for i in range(n):
            if first[i] != v[i]:
                n = i
                break
    return first[:n]


# --------------------------------------------------------------------------- drafts

def guess_role(block: Sequence[str]) -> Role:
    text = "\n".join(block[-12:])
    return Role.SECONDARY if _SECONDARY_HINTS.search(text) else Role.ROOT


def draft_id(key_line: str, taken: set[str]) -> str:
    msg = key_line.split(": ", 1)[1] if ": " in key_line else key_line
    words = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9]+", mask(msg)) if w.lower() not in _STOP]
    if not words:
        words = [w.lower() for w in re.findall(r"[A-Za-z][a-z0-9]+", key_line.split(":")[0])] or ["unknown"]
    base = "new-" + "-".join(words[:4])
    cand, n = base, 2
    while cand in taken:
        cand, n = f"{base}-{n}", n + 1
    taken.add(cand)
    return cand


def _clean_lines(clean_dirs: Sequence[Path]) -> list[tuple[Path, list[str]]]:
    out = []
    for d in clean_dirs:
        for f in _log_files(d):
            try:
                out.append((f, f.read_text(encoding="utf-8", errors="replace").splitlines()))
            except OSError:
                continue
    return out


def _clean_excerpt(pattern_words: set[str], clean: list[tuple[Path, list[str]]], rx) -> list[str]:
    """The window of clean text that shares the most words with the draft (a tempting near miss)."""
    best: tuple[int, Path, int] | None = None
    for f, lines in clean:
        for i, ln in enumerate(lines):
            score = len(pattern_words & set(re.findall(r"[A-Za-z]{3,}", ln[:2000])))
            if score and (best is None or score > best[0]):
                best = (score, f, i)
    if best is None:
        return list(_GENERIC_CLEAN)
    lines = dict((str(f), ls) for f, ls in clean)[str(best[1])]
    window = [ln[:400] for ln in lines[max(0, best[2] - 8): best[2] + 8]]
    window = [ln for ln in window if not ln.startswith("# ")]
    if any(rx.search(ln) for ln in window):
        return list(_GENERIC_CLEAN)
    return window or list(_GENERIC_CLEAN)


def write_drafts(groups: Sequence[Group], out: str | Path, ledger, *, top: int = 5, min_count: int = 2,
                 clean_dirs: Sequence[Path] = ()) -> list[Draft]:
    """Write drafts for the top groups; each is verified (lint, members, clean corpus) or removed."""
    from sigclass.ledger.pack import load_ledger
    from sigclass.authoring.lint import _longest_literal, lint
    from sigclass.scan.scanner import Scanner

    out = Path(out)
    clean = _clean_lines(clean_dirs)
    taken = set(ledger.signatures)
    drafts: list[Draft] = []
    for gi, g in enumerate(groups):
        if len([d for d in drafts if d.written]) >= top:
            break
        if g.count < min_count:
            break
        key_lines = [m.key_line for m in g.members]
        fid = draft_id(key_lines[0], taken)
        role = guess_role(g.members[0].block)
        path = out / f"{fid}.yaml"
        pattern = induce(key_lines)
        d = Draft(gi, fid, pattern or "", role, g.count, str(path), False)
        drafts.append(d)
        if not pattern or _longest_literal(pattern) < 4:
            d.reason = "the template has no literal text of 4 or more bytes to anchor a regex"
            continue
        rx = regex.compile(pattern)
        if not all(rx.search(k) for k in key_lines):
            d.reason = f"the induced pattern {pattern!r} misses some members"
            continue
        hit = next(((f, i) for f, ls in clean for i, ln in enumerate(ls, 1) if rx.search(ln)), None)
        if hit is not None:
            d.reason = f"the induced pattern matches clean text at {hit[0]}:{hit[1]}"
            continue
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"{out}: cannot make the drafts folder ({exc.strerror or exc}); name a writable folder with --out") from None
        doc = {
            "id": fid,
            "title": f"Draft: {g.template.split(' | ')[-1][:100]}",
            "role": role.value,
            "status": Status.ACTIVE.value,
            "priority": 40,
            "match": {"any": [pattern]},
            "mitigation": (f"Draft induced by `sigclass suggest` from {g.count} failures in {len(g.runs)} run(s) "
                           f"on {len(g.workers)} worker(s); write down the cause and the fix before adding it to the ledger."),
            "caveats": [f"seen at {m.source}:{m.line}" for m in g.members[:5]],
        }
        path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=1000), encoding="utf-8")
        examples: list[str] = []
        seen_keys: set[str] = set()
        for m in g.members:
            if m.key_line in seen_keys or len(seen_keys) >= 3:
                continue
            seen_keys.add(m.key_line)
            examples.append(f"# expect: {fid}")
            examples.extend(b for b in m.block if not b.startswith("# "))
        examples.append(f"# expect-not: {fid}")
        words = set(re.findall(r"[A-Za-z]{3,}", g.template.replace("<", " ").replace(">", " ")))
        examples.extend(_clean_excerpt(words, clean, rx))
        path.with_suffix(".log").write_text("\n".join(examples) + "\n", encoding="utf-8")
        d.written = True
    # lint what was written, the same way `sigclass ledger lint DIR` does; drop drafts with HIGH issues
    written = [d for d in drafts if d.written]
    if written:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lg = load_ledger([out], shipped=False)
            issues = lint(lg, shipped=False, scanner=Scanner(lg, signatures=SignatureMode.REGEX))
        for d in written:
            bad = [i for i in issues if i.severity in ("HIGH", "MEDIUM") and Path(i.where.rsplit(":", 1)[0]).stem == d.id]
            if bad:
                d.written = False
                d.reason = "lint: " + "; ".join(f"{i.name} {i.message}" for i in bad[:2])
                Path(d.path).unlink(missing_ok=True)
                Path(d.path).with_suffix(".log").unlink(missing_ok=True)
    return drafts
