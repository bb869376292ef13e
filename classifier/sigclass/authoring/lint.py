"""Ledger lint: validator classes that return issues with a severity (STYLE habit 5).

Each validator looks at one signature (`validate`) and may look across the
pack at the end (`finalize`). Output is one greppable line per issue:
``issue=<name> severity=<HIGH|MEDIUM|LOW|INFO> signature=<path:line> <message>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
import re
from typing import ClassVar

from sigclass.authoring.examples import check, parse_examples
from sigclass.ledger.context import CONTEXT, GROUPS
from sigclass.ledger.families import CONTRACT_IDS
from sigclass.ledger.pack import Ledger, sig_files
from sigclass.ledger.signature import Signature
from sigclass.vocab import Status

SEVERITIES = ("HIGH", "MEDIUM", "LOW", "INFO")


@dataclass(frozen=True)
class Issue:
    name: str
    severity: str
    where: str
    message: str

    def line(self) -> str:
        return f"issue={self.name} severity={self.severity} signature={self.where} {self.message}"


class Validator:
    name: ClassVar[str] = ""
    severity: ClassVar[str] = "HIGH"
    registry: ClassVar[list[type["Validator"]]] = []

    def __init_subclass__(cls, **kw) -> None:
        super().__init_subclass__(**kw)
        if cls.name:
            Validator.registry.append(cls)

    def __init__(self, ledger: Ledger, ctx: dict) -> None:
        self.ledger = ledger
        self.ctx = ctx

    def issue(self, where: str, message: str) -> Issue:
        return Issue(self.name, self.severity, where, message)

    def validate(self, sig: Signature) -> list[Issue]:
        return []

    def finalize(self) -> list[Issue]:
        return []


class SupersedesTarget(Validator):
    name = "supersedes-target"

    def validate(self, sig: Signature) -> list[Issue]:
        out = []
        for key in ("supersedes", "superseded_by"):
            for i, s in enumerate(getattr(sig, key)):
                if s.id not in self.ledger:
                    out.append(self.issue(sig.location(key, i), f"{key} names {s.id!r}, which no signature defines"))
        return out


class SupersedesReciprocal(Validator):
    """`A superseded_by B` and `B supersedes A` come in pairs (what `sigclass ledger supersede` writes)."""

    name = "supersedes-one-sided"
    severity = "MEDIUM"

    def validate(self, sig: Signature) -> list[Issue]:
        out = []
        for key, back in (("supersedes", "superseded_by"), ("superseded_by", "supersedes")):
            for i, s in enumerate(getattr(sig, key)):
                other = self.ledger.signatures.get(s.id)
                if other is not None and not any(x.id == sig.id for x in getattr(other, back)):
                    out.append(self.issue(sig.location(key, i), f"{key} names {s.id!r}, but {s.id} has no {back} "
                                          f"link back to {sig.id}; add it (sigclass ledger supersede writes both)"))
        return out


class ProbeDeclarations(Validator):
    """Declared probes name facts the pack can read (or a fact group) and families it defines; the shipped pack
    declares every probe of the H100 prefix-cache family and of at least four other families."""

    name = "probe-declaration"
    REQUIRED_FULLY_DECLARED = ("vllm-h100-prefix-cache-ima",)
    MIN_FULLY_DECLARED = 5

    def validate(self, sig: Signature) -> list[Issue]:
        known = set(CONTEXT) | set(GROUPS) | {p.fact for s in self.ledger for p in s.facts}
        out = []
        for i, probe in enumerate(sig.probe_decls):
            where = sig.location("probes", i)
            for name in probe.facts():
                if name not in known:
                    out.append(self.issue(where, f"probe names fact {name!r}, which no family reads and no fact group "
                                          f"is called; declare it under facts: of a family, or use one of {', '.join(GROUPS)}"))
            if probe.points_to and probe.points_to not in self.ledger:
                out.append(self.issue(where, f"probe points_to {probe.points_to!r}, which no signature defines"))
            overlap = set(probe.keep) & {n for n, _ in probe.vary}
            if overlap:
                out.append(self.issue(where, f"probe both varies and keeps {', '.join(sorted(overlap))}"))
        return out

    def finalize(self) -> list[Issue]:
        if not self.ctx.get("shipped"):
            return []
        full = [s.id for s in self.ledger if s.probe_decls and all(p.declared for p in s.probe_decls)]
        out = [self.issue(self.ledger[f].location("probes") if f in self.ledger else "signatures/",
                          f"every probe of {f} must be declared (vary/keep/expect or inspect)")
               for f in self.REQUIRED_FULLY_DECLARED if f not in full]
        if len(full) < self.MIN_FULLY_DECLARED:
            out.append(self.issue("signatures/", f"{len(full)} families declare every probe; the pack needs at least "
                                  f"{self.MIN_FULLY_DECLARED}"))
        return out


class ContractIds(Validator):
    name = "contract-id-missing"

    def finalize(self) -> list[Issue]:
        if not self.ctx.get("shipped"):
            return []
        return [self.issue("signatures/", f"family {fid!r} of the contract has no signature file")
                for fid in CONTRACT_IDS if fid not in self.ledger]


_WORD_B = re.compile(r"(?<!\\)\\b")
_LOOK = re.compile(r"\(\?<?[=!]")
_BACKREF = re.compile(r"\\[1-9]|\(\?P=")


def _longest_literal(src: str) -> int:
    """Longest run of plain literal characters outside classes and groups' syntax (rough)."""
    best = cur = 0
    i = 0
    in_class = False
    while i < len(src):
        c = src[i]
        if in_class:
            if c == "\\":
                i += 1
            elif c == "]":
                in_class = False
            cur = 0
        elif c == "\\":
            nxt = src[i + 1 : i + 2]
            if nxt and not nxt.isalnum():
                cur += 1
            else:
                cur = 0
            i += 1
        elif c == "[":
            in_class = True
            cur = 0
        elif c in "()|.^$":
            cur = 0
        elif c in "*?":
            cur = max(cur - 1, 0)
            best = max(best, cur)
            cur = 0
        elif c == "+":
            pass
        elif c == "{":
            j = src.find("}", i)
            i = j if j != -1 else i
            cur = 0
        else:
            cur += 1
        best = max(best, cur)
        i += 1
    return best


class PatternRules(Validator):
    name = "pattern-rule"
    severity = "MEDIUM"

    def validate(self, sig: Signature) -> list[Issue]:
        out = []
        for p in (*sig.any, *sig.all, *sig.none, *sig.facts):
            if _WORD_B.search(p.source):
                out.append(self.issue(p.location, f"pattern uses \\b, which is slow on non-ASCII progress bars: {p.source!r}"))
            if _LOOK.search(p.source) or _BACKREF.search(p.source):
                out.append(self.issue(p.location, f"pattern uses lookaround or a backreference, which the prefilter cannot run: {p.source!r}"))
            if p.kind in ("any", "fact") and _longest_literal(p.source) < 4:
                out.append(self.issue(p.location, f"pattern has no required literal of 4 or more bytes: {p.source!r}"))
        return out


class OverTimeRules(Validator):
    """The `over_time` rules' line patterns follow the same speed rules; each rule kind needs examples."""

    name = "over-time-rule"
    severity = "MEDIUM"

    def validate(self, sig: Signature) -> list[Issue]:
        out = []
        for rule in sig.over_time:
            for role, p in rule.lines():
                if _WORD_B.search(p.source):
                    out.append(self.issue(p.location, f"{rule.kind} rule {rule.name}: {role} uses \\b: {p.source!r}"))
                if _LOOK.search(p.source) or _BACKREF.search(p.source):
                    out.append(self.issue(p.location, f"{rule.kind} rule {rule.name}: {role} uses lookaround or a "
                                                      f"backreference, which the prefilter cannot run: {p.source!r}"))
                if _longest_literal(p.source) < 4:
                    out.append(self.issue(p.location, f"{rule.kind} rule {rule.name}: {role} has no required literal "
                                                      f"of 4 or more bytes: {p.source!r}"))
        return out


class OverTimeExamples(Validator):
    """Every `over_time` rule fires on at least one `# expect:` example of its family; a recovery rule (which finds
    nothing by itself) makes a finding of its family `recovered` in at least one `# expect-not:` example."""

    name = "over-time-examples"

    def validate(self, sig: Signature) -> list[Issue]:
        scanner = self.ctx.get("scanner")
        path = Path(sig.path).with_suffix(".log")
        if not sig.over_time or scanner is None or not path.exists():
            return []
        fired = set()
        got_past = False
        for e in parse_examples(path):
            if e.family != sig.id or e.todo:
                continue
            if e.kind == "expect":
                res = scanner.scan_text(e.text, source=f"{e.path}:{e.line}")
                fired.update(f.facts.get("over_time_rule") for f in res.findings if f.family == sig.id)
            elif any(r.kind == "recovery" for r in sig.over_time):
                res = scanner.scan_text(e.text, source=f"{e.path}:{e.line}")
                got_past = got_past or any(f.family == sig.id and f.status == Status.RECOVERED for f in res.findings)
        out = [self.issue(rule.location, f"{rule.kind} rule {rule.name} fires on no `# expect: {sig.id}` example in {path.name}")
               for rule in sig.over_time if rule.kind != "recovery" and f"{rule.kind} {rule.name}" not in fired]
        out += [self.issue(rule.location, f"recovery rule {rule.name} makes no finding `recovered` in an "
                                          f"`# expect-not: {sig.id}` example of {path.name}")
                for rule in sig.over_time if rule.kind == "recovery" and not got_past]
        return out


class Examples(Validator):
    name = "examples"

    def validate(self, sig: Signature) -> list[Issue]:
        path = Path(sig.path).with_suffix(".log")
        if not path.exists():
            return [self.issue(sig.location(), f"no example file {path.name}: add `# expect: {sig.id}` and `# expect-not: {sig.id}` excerpts")]
        exs = [e for e in parse_examples(path) if e.family == sig.id]
        out = []
        kinds = {e.kind for e in exs if not e.todo}
        if "expect" not in kinds:
            out.append(self.issue(f"{path}:1", f"no `# expect: {sig.id}` example"))
        if "expect-not" not in kinds:
            out.append(self.issue(f"{path}:1", f"no `# expect-not: {sig.id}` example"))
        scanner = self.ctx.get("scanner")
        for e in exs:
            if scanner is None:
                break
            ok, got = check(scanner, e)
            if e.todo:
                self.ctx.setdefault("todo", []).append(e)
                continue
            if not ok:
                out.append(self.issue(f"{path}:{e.line}", f"{e.kind} {sig.id} fails: {got}"))
        return out


class TodoCount(Validator):
    name = "todo-examples"
    severity = "INFO"

    def finalize(self) -> list[Issue]:
        todo = self.ctx.get("todo", [])
        if not todo:
            return []
        return [self.issue(f"{e.path}:{e.line}", f"known miss recorded: todo-{e.kind} {e.family}") for e in todo]


class SimilarTitles(Validator):
    name = "duplicate-title"
    severity = "LOW"

    def finalize(self) -> list[Issue]:
        seen: dict[str, str] = {}
        out = []
        for sig in self.ledger:
            t = sig.title.lower()
            if t in seen:
                out.append(self.issue(sig.location("title"), f"title also used by {seen[t]}"))
            seen[t] = sig.id
        return out


def path_issues(paths: list[Path]) -> list[Issue]:
    """A path given to lint that holds no signature file: a typo must not lint clean."""
    issues = []
    for p in paths:
        if not p.exists():
            issues.append(Issue("load", "HIGH", str(p), "no such file or folder; check the path"))
        elif p.is_dir() and not sig_files(p):
            issues.append(Issue("load", "HIGH", str(p), "no signature files (*.yaml) in this folder"))
    return issues


def lint(ledger: Ledger, *, shipped: bool, scanner=None) -> list[Issue]:
    ctx: dict = {"shipped": shipped, "scanner": scanner}
    issues: list[Issue] = []
    for problem in ledger.problems:
        issues.append(Issue("load", "HIGH", problem.where, problem.message))
    validators = [cls(ledger, ctx) for cls in Validator.registry]
    for sig in ledger:
        for v in validators:
            issues.extend(v.validate(sig))
    for v in validators:
        issues.extend(v.finalize())
    return issues
