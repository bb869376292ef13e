"""The comparison for people (`sigclass compare --format text`)."""

from __future__ import annotations

from typing import Any, Mapping

from sigclass.diagnosis.contrast import line


def compare_text(c: Mapping[str, Any]) -> list[str]:
    out = [f"compare: {', '.join(c['runs'])} ({c['units']} units)"]
    if c["not_comparable"]:
        out.append("not comparable (facts a contrast keeps equal differ; no verdict):")
        for d in c["not_comparable"]:
            out.append(f"  {d['fact']}: {', '.join(d['values'])}  ({' vs '.join(d.get('runs', []))})")
    out.append("discriminating facts:" if c["discriminating"] else "discriminating facts: none")
    for d in c["discriminating"]:
        out.append(f"  {line(d)}")
    if c["probes"]:
        out.append("probes:")
        for p in c["probes"]:
            runs = f"  [{', '.join(p['runs'])}]" if p["runs"] else ""
            out.append(f"  {p['status']:9} {p['family']}: {p['probe'].split(';')[0]}{runs}")
    if not c["verdicts"] and c["not_comparable"]:
        out.append("verdicts: none (the runs differ in facts a contrast keeps equal)")
    if c["verdicts"]:
        out.append("verdicts:")
        for v in c["verdicts"]:
            to = f" -> {v['points_to']}" if v["status"] == "refuted" and v["points_to"] else ""
            out.append(f"  {v['status']:9} {v['family']}{to}: {v['why']}")
    for p in c.get("problems", []):
        out.append(f"problem: {p}")
    return out
