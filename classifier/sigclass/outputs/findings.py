"""Writing findings, and each log's verdict, for people (text) and programs (json, jsonl)."""

from __future__ import annotations

import json
import sys
from typing import Any, IO

from sigclass.outputs.colour import Paint, wanted
from sigclass.outputs.prose import clip_evidence, terms, wrap
from sigclass.problems import to_dicts
from sigclass.records import Finding, Folder, Verdict
from sigclass.text.safe import visible
from sigclass.vocab import CauseBasis, ColourMode, Method, Role, Status, UNKNOWN


def use_colour(stream: IO[str], when: ColourMode | str = ColourMode.AUTO) -> bool:
    return wanted(stream, when)


def finding_text(f: Finding, paint: Paint) -> str:
    where = f"{f.source}:{f.line}"
    if f.end_line != f.line:
        where += f"-{f.end_line}"
    fam = paint(f.family, "1;31" if f.role == Role.ROOT and f.family != UNKNOWN else "1;33" if f.family == UNKNOWN else "33")
    head = [where, fam]
    if f.role == Role.SECONDARY:
        head.append(paint("(secondary)", "2"))
    if f.status == Status.RED_HERRING:
        head.append(paint("[red herring]", "35"))
    if f.status == Status.RECOVERED:
        head.append(paint("[recovered]", "32"))
    if f.method == Method.LEARNED:
        head.append(paint(f"[learned p={f.confidence:.2f}]", "36"))
    if f.worker:
        head.append(f"worker {visible(f.worker)}")
    if f.time:
        head.append(f.time)
    out = ["  ".join(head)]
    if f.role == Role.SECONDARY and f.root:
        # a cascade victim: what it printed and whose victim it is; the advice is the root's
        out.append(paint(f"  > {clip_evidence(visible(f.evidence[-1]))}", "2") if f.evidence else "")
        out.append(f"  follows {f.root['family']} at {f.root['source']}:{f.root['line']}")
        return "\n".join(x for x in out if x)
    if f.family != UNKNOWN:
        out.append(f"  {f.title}")
    keep = [*terms(f.probes), *f.facts.values()]
    for ev in f.evidence[:3]:
        out.append(paint(f"  > {clip_evidence(visible(ev), keep)}", "2"))
    # the ledger's prose is whole, wrapped between words
    if f.mitigation:
        out.extend(wrap(f.mitigation, "  ", "do: "))
    if f.probes:
        out.append("  first check:")
        for x in f.probes:
            out.extend(wrap(x, "    ", "- "))
    for c in f.caveats:
        out.extend(paint(x, "35") for x in wrap(c, "  ", "caveat: "))
    for s in f.superseded_by:
        out.extend(wrap(s["note"], "  ", f"superseded by {s['id']}: "))
    if f.family == UNKNOWN:
        out.append(f"  fingerprint {f.fingerprint} (no signature; `sigclass suggest` drafts one)")
    return "\n".join(out)


_BASIS_WORDS = {CauseBasis.OWN_LINES: "from its own lines", CauseBasis.LAUNCHER_SUMMARY: "from the launcher's summary",
                CauseBasis.EXIT_CODE: "from an exit code alone"}


def verdict_text(v: Verdict, paint: Paint) -> str:
    """A log's verdict: the cause first, then what it took down and what broke on its own ('' without a cause)."""
    c = v.cause
    if c is None:
        return ""
    who = c.worker if c.worker else "unknown"
    out = wrap(f"cause {c.family}, worker {who}, at {v.source}:{c.line} "
               f"(confidence {c.confidence:.2f}, {_BASIS_WORDS.get(c.basis, c.basis)})", "")
    out[0] = out[0].replace(c.family, paint(c.family, "1;31"), 1)
    if v.victims:
        groups: dict[str, list[str]] = {}
        for x in v.victims:
            groups.setdefault(x.family or "no error of its own", []).append(x.worker or "a worker not named")
        out.extend(wrap("; ".join(f"{fam} on {', '.join(ws)}" for fam, ws in groups.items()), "  ", "victims: "))
    for x in v.independent:
        out.extend(wrap(f"{x.family}, worker {x.worker or 'unknown'}, line {x.line}", "  ", "independent: "))
    same = 1 + sum(1 for x in v.independent if x.family == c.family)
    if same > 1:
        out.extend(wrap(f"{c.family} struck {same} workers separately", "  ", "systematic: "))
    return "\n".join(out)


MAX_HELD = 4096  # jsonl findings of one file held back for its verdict; past this they stream


class Writer:
    """Streams findings as they are found; folds repeats for text and json. Each source ends with its verdict:
    jsonl prints it after the source's last finding, text before the source's findings, json puts every verdict
    first. Text and jsonl hold a file's findings back until its verdict, so that what the whole source says (a
    victim printed before its root, a relay of a worker's error, a recovery) is in the record; from a live pipe they
    stream, and the verdict record has the last word."""

    def __init__(self, fmt: str, stream: IO[str] | None = None, colour: ColourMode | str = ColourMode.AUTO) -> None:
        self.fmt = fmt
        self.stream = stream or sys.stdout
        self.paint = Paint(use_colour(self.stream, colour) and fmt == "text")
        # one folded finding per kind, not every finding: memory does not grow with the number of findings
        self.folder = Folder(copy=True)
        self.verdicts: list[Verdict] = []
        self.hold = False  # text: hold a source's findings until its verdict
        self.held: list[Finding] = []

    def start(self, *, live: bool) -> None:
        """A new source begins; a live one (a pipe still being written) streams its findings in text too."""
        self.hold = self.fmt in ("text", "jsonl") and not live

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    def finding(self, f: Finding) -> None:
        if self.fmt == "jsonl":
            if self.hold:
                self.held.append(f)
                if len(self.held) >= MAX_HELD:  # a storm: memory stays bounded, the rest of the source streams
                    self._flush_held()
                    self.hold = False
            else:
                self._write(json.dumps(f.to_dict(), ensure_ascii=False) + "\n")
            return
        if not self.folder.add(f):
            return
        if self.fmt == "text":
            if self.hold:
                self.held.append(f)
            else:
                self._write(finding_text(f, self.paint) + "\n\n")

    def verdict(self, v: Verdict | None) -> None:
        """A source's verdict, once its whole input has been read."""
        if v is None:
            self._flush_held()
            return
        self.verdicts.append(v)
        if self.fmt == "jsonl":
            self._flush_held()
            self._write(json.dumps({"kind": "verdict", **v.to_dict()}, ensure_ascii=False) + "\n")
        elif self.fmt == "text":
            text = verdict_text(v, self.paint)
            if text:
                self._write(text + "\n\n")
            self._flush_held()

    def _flush_held(self) -> None:
        held, self.held = self.held, []
        held.sort(key=lambda f: f.line)  # a source's own order (a launcher's report is published at its end)
        for f in held:
            if self.fmt == "jsonl":
                self._write(json.dumps(f.to_dict(), ensure_ascii=False) + "\n")
            else:
                self._write(finding_text(f, self.paint) + "\n\n")

    def close(self, problems: list[str], summary: dict[str, Any] | None = None) -> None:
        self._flush_held()
        folded = self.folder.findings()
        if self.fmt == "json":
            doc = {"verdicts": [v.to_dict() for v in self.verdicts], "findings": [f.to_dict() for f in folded],
                   "problems": to_dicts(problems)}
            if summary:
                doc["summary"] = summary
            self._write(json.dumps(doc, ensure_ascii=False, indent=2) + "\n")
        elif self.fmt == "text":
            reps = [f for f in folded if f.count > 1]
            for f in reps:
                lines = ", ".join(str(x) for x in f.lines[:12]) + (" ..." if f.count > 12 else "")
                self._write(f"{f.source}: {f.family} repeated ×{f.count}{on_workers(f.workers)} (lines {lines})\n")
            for f in folded:
                if f.status == Status.RECOVERED:
                    self._write(f"{f.source}:{f.line}: {f.family} recovered (the worker's progress went on after it)\n")
                if f.facts.get("symptom_of") and f.root:
                    self._write(f"{f.source}:{f.line}: {f.family} is a symptom of {f.root['family']} at "
                                f"{f.root['source']}:{f.root['line']} (superseded)\n")
            roots = sum(1 for f in folded if f.role == "root")
            if folded:
                self._write(f"{len(folded)} distinct failure(s), {roots} root, "
                            f"{len(folded) - roots} secondary, {sum(f.count for f in folded)} occurrence(s)\n")


def on_workers(workers: list[str], most: int = 12) -> str:
    """' on ranks 0, 1, 2' (numeric workers are ranks), ' on workers gpu0, gpu1', or '' for none."""
    if not workers:
        return ""
    noun = "rank" if all(w.isdigit() for w in workers) else "worker"
    names = ", ".join(workers[:most]) + (f" and {len(workers) - most} more" if len(workers) > most else "")
    return f" on {noun}{'s' if len(workers) != 1 else ''} {names}"
