"""The report's comparison section (several runs): the discriminating facts and the probe outcomes, as small tables.

Stable hooks: `section.comparison`, `tr.fact[data-fact]`, `tr.probe[data-family][data-status]`,
`li.verdict[data-family][data-status]`, `li.not-comparable[data-fact]`.
"""

from __future__ import annotations

from typing import Any, Mapping

from sigclass.outputs.report.markup import attrs, esc


def comparison_section(c: Mapping[str, Any]) -> str:
    out = ['<section class="comparison"><h2>Comparison of the runs</h2>']
    if c.get("not_comparable"):
        out.append("<p>Not comparable: facts a contrast keeps equal differ, so there is no verdict.</p><ul>")
        for d in c["not_comparable"]:
            out.append(f'<li {attrs(class_="not-comparable", data_fact=d["fact"])}>{esc(d["fact"])}: '
                       f'{esc(", ".join(d["values"]))} ({esc(" vs ".join(d.get("runs", [])))})</li>')
        out.append("</ul>")
    if c.get("verdicts"):
        out.append("<ul class=\"verdicts\">")
        for v in c["verdicts"]:
            to = f' → {esc(v["points_to"])}' if v["status"] == "refuted" and v.get("points_to") else ""
            out.append(f'<li {attrs(class_="verdict", data_family=v["family"], data_status=v["status"])}>'
                       f'<b>{esc(v["status"])}</b> {esc(v["family"])}{to}: {esc(v["why"])}</li>')
        out.append("</ul>")
    out.append('<table class="facts"><thead><tr><th>fact</th><th>failed / units per value</th><th>p</th></tr></thead><tbody>')
    if not c.get("discriminating"):
        out.append('<tr><td colspan="3">no fact separates failing units from clean ones</td></tr>')
    for d in c.get("discriminating", []):
        vals = "; ".join(f'{v["value"]}: {v["failed"]}/{v["total"]}' for v in d["values"])
        same = f' <small>(same split: {esc(", ".join(d["same_split"]))})</small>' if d.get("same_split") else ""
        out.append(f'<tr {attrs(class_="fact", data_fact=d["fact"])}><td>{esc(d["fact"])}{same}</td>'
                   f'<td>{esc(vals)}</td><td>{d["p"]:.2g}</td></tr>')
    out.append("</tbody></table>")
    if c.get("probes"):
        out.append('<table class="probes"><thead><tr><th>family</th><th>probe</th><th>outcome</th><th>runs</th></tr></thead><tbody>')
        for p in c["probes"]:
            out.append(f'<tr {attrs(class_="probe", data_family=p["family"], data_status=p["status"])}>'
                       f'<td>{esc(p["family"])}</td><td>{esc(p["probe"])}</td><td>{esc(p["status"])}</td>'
                       f'<td>{esc(", ".join(p["runs"]))}</td></tr>')
        out.append("</tbody></table>")
    out.append("</section>")
    return "".join(out)
