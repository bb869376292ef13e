"""`sigclass report`: the HTML post-mortem, checked in headless Chromium by its elements.

The browser tests render the report of the fixture runs under
tests/files/report/ (one with a log line holding a `<script>`), let Chromium
load it (`--dump-dom` prints the DOM after the page's scripts ran) and parse
that DOM. They skip only when no Chromium binary exists (CI installs Debian's
`chromium` in scripts/test.sh).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from html.parser import HTMLParser
import os
from pathlib import Path
import re
import shutil
import subprocess

import pytest
from conftest import FILES, REPO
from typer.testing import CliRunner

from sigclass.cli.app import app
from sigclass.outputs.report.geometry import BASE_W, layout, MAX_W, MIN_BAR
from sigclass.outputs.report.html import render, run_dict, write_report
from sigclass.outputs.report.markup import esc

runner = CliRunner()
CASCADE = FILES / "report" / "cascade"
UNTIMED = FILES / "report" / "untimed"
INJECTED = "<script>document.title='INJECTED';document.documentElement.setAttribute('data-injected','yes')</script>"


# --------------------------------------------------------------------------- a tiny DOM
@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list["Node"] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # text pieces, in order, of this node only

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def iter(self):
        yield self
        for c in self.children:
            yield from c.iter()

    def select(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list["Node"]:
        """Descendants by tag, class and attributes (`data_worker="gpu0"`; `data_unit=True`: present)."""
        out = []
        for n in self.iter():
            if tag and n.tag != tag:
                continue
            if cls and not set(cls.split(".")) <= n.classes:
                continue
            ok = True
            for k, v in attrs.items():
                name = k.replace("_", "-")
                if v is True:
                    ok = ok and name in n.attrs
                else:
                    ok = ok and n.attrs.get(name) == v
            if ok:
                out.append(n)
        return out

    def text(self) -> str:
        parts = list(self.texts)
        for c in self.children:
            parts.append(c.text())
        return "".join(parts)


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                break

    def handle_data(self, data):
        self.stack[-1].texts.append(data)


def parse(html_text: str) -> Node:
    b = _Builder()
    b.feed(html_text)
    b.close()
    return b.root


# --------------------------------------------------------------------------- chromium
def _chromium() -> str | None:
    for cand in (os.environ.get("SIGCLASS_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                 shutil.which("chromium-browser"), shutil.which("google-chrome")):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


CHROMIUM = _chromium()
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary (apt-get install chromium; scripts/test.sh does it)")

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--disable-extensions", "--disable-dev-shm-usage", "--mute-audio"]


def chromium(page: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    profile = tmp / "chromium-profile"
    profile.mkdir(exist_ok=True)
    cmd = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *extra, page.resolve().as_uri()]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(tmp)})


def dump_dom(page: Path, tmp: Path) -> Node:
    res = chromium(page, tmp, "--virtual-time-budget=3000", "--dump-dom")
    assert res.returncode == 0 and "<html" in res.stdout, res.stderr[-2000:]
    return parse(res.stdout)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    """The report of both fixture runs, written by the CLI."""
    out = tmp_path_factory.mktemp("report") / "report.html"
    result = runner.invoke(app, ["report", str(CASCADE), str(UNTIMED), "--out", str(out), "-j", "1"])
    assert result.exit_code == 1, result.output  # failures found, report written
    assert out.exists(), result.output
    return out


@pytest.fixture(scope="module")
def dom(page: Path, tmp_path_factory) -> Node:
    if CHROMIUM is None:
        pytest.skip("no chromium binary (apt-get install chromium; scripts/test.sh does it)")
    return dump_dom(page, tmp_path_factory.mktemp("chromium"))


def _run(dom: Node, name: str) -> Node:
    runs = dom.select("section", "run", data_run=name)
    assert len(runs) == 1, [n.attrs.get("data-run") for n in dom.select("section", "run")]
    return runs[0]


# --------------------------------------------------------------------------- browser tests
@needs_chromium
def test_scripts_run_but_the_injected_one_did_not(dom: Node) -> None:
    html_el = dom.select("html")[0]
    # the page's own script ran in this browser (so the check below means something) ...
    assert html_el.attrs.get("data-js") == "ready"
    # ... and the script from the log did not
    assert "data-injected" not in html_el.attrs
    assert not any("data-injected" in n.attrs for n in dom.iter())
    assert "INJECTED" not in dom.select("title")[0].text()
    # the log line shows as text, whole, inside the root fault's evidence
    evidence = [n.text() for n in dom.select("pre", "evidence")]
    assert any(INJECTED in t for t in evidence), evidence
    # and no <script> element came out of the log: the page has exactly its own one
    scripts = dom.select("script")
    assert len(scripts) == 1 and "INJECTED" not in scripts[0].text()


@needs_chromium
def test_timeline_lanes_and_bars(dom: Node) -> None:
    run = _run(dom, "cascade")
    lanes = {n.attrs["data-worker"] for n in run.select("g", "lane")}
    assert lanes == {"gpu0", "gpu1", "gpu2"}
    units = {n.attrs["data-unit"]: n for n in run.select("rect", "unit")}
    assert set(units) == {str(i) for i in range(9)}
    status = {u: n.attrs["data-status"] for u, n in units.items()}
    assert status == {"0": "ok", "1": "ok", "2": "failed", "3": "failed", "4": "failed", "5": "incomplete",
                      "6": "incomplete", "7": "ok", "8": "ok"}
    # each bar sits in its worker's lane and has a visible width
    for lane in run.select("g", "lane"):
        for bar in lane.select("rect", "unit"):
            assert bar.attrs["data-worker"] == lane.attrs["data-worker"]
            assert float(bar.attrs["width"]) >= MIN_BAR
    # bars of one lane do not overlap and follow the log order
    xs = [(float(b.attrs["x"]), float(b.attrs["width"])) for b in _run(dom, "cascade").select("g", "lane", data_worker="gpu0")[0].select("rect", "unit")]
    assert all(a[0] + a[1] <= b[0] + 1e-6 for a, b in zip(xs, xs[1:]))
    assert run.select(cls="timeline")[0].attrs["data-mode"] == "time"
    assert {n.attrs["data-worker"] for n in run.select("div", "lane-label")} == lanes


@needs_chromium
def test_roots_marked_and_cascades_tied_to_their_root(dom: Node) -> None:
    run = _run(dom, "cascade")
    markers = {n.attrs["data-unit"]: n.attrs["data-family"] for n in run.select(cls="root-marker")}
    assert markers == {"2": "cuda-oom", "3": "cuda-oom"}
    links = {(n.attrs["data-root"], n.attrs["data-victim"]) for n in run.select("path", "cascade-link")}
    assert links == {("2", "4"), ("2", "6"), ("3", "5")}
    bands = {n.attrs["data-root"] for n in run.select(cls="cascade-band")}
    assert bands == {"2", "3"}
    # one colour per cascade: the marker, its band and its links share it
    for root in ("2", "3"):
        marker = [n for n in run.select(cls="root-marker") if n.attrs["data-unit"] == root][0]
        colours = {marker.attrs["fill"]}
        colours |= {n.attrs["fill"] for n in run.select(cls="cascade-band", data_root=root)}
        colours |= {n.attrs["stroke"] for n in run.select("path", "cascade-link", data_root=root)}
        assert len(colours) == 1, colours
    victims = {n.attrs["data-unit"]: n.attrs["data-root"] for n in run.select("rect", "unit.victim")}
    assert victims == {"4": "2", "5": "3", "6": "2"}


@needs_chromium
def test_cards_systematic_and_problems(dom: Node) -> None:
    run = _run(dom, "cascade")
    cards = run.select("article", "card.root-fault")
    assert sorted((c.attrs["data-family"], c.attrs["data-unit"], c.attrs["data-worker"]) for c in cards) == [
        ("cuda-oom", "2", "gpu0"), ("cuda-oom", "3", "gpu1")]
    for c in cards:
        assert c.select("h4")[0].text() == "cuda-oom"
        assert c.select(cls="mitigation"), "mitigation"
        assert c.select("details", "probes")[0].select("li"), "probes"
        assert c.select("details", "caveats")[0].select("li"), "caveats"
        assert c.select("pre", "evidence")[0].text().startswith("torch.OutOfMemoryError")
    by_unit = {c.attrs["data-unit"]: c for c in cards}
    assert by_unit["2"].attrs["data-victims"] == "2" and by_unit["3"].attrs["data-victims"] == "1"
    # a root marker links to its card
    links = [a.attrs["href"] for a in run.select("a") if a.select(cls="root-marker")]
    assert sorted(links) == sorted("#" + c.attrs["id"] for c in cards)
    systematic = run.select(cls="systematic")
    assert len(systematic) == 1 and systematic[0].attrs["data-family"] == "cuda-oom"
    assert systematic[0].attrs["data-workers"] == "2"
    assert "2 worker(s) independently" in systematic[0].text()
    problems = [p.text() for p in run.select("li", "problem")]
    assert problems == ["gpu3.log: binary data, not a text log; skipped"]


@needs_chromium
def test_units_without_times_are_laid_out_by_order(dom: Node) -> None:
    run = _run(dom, "untimed")
    assert run.select(cls="timeline")[0].attrs["data-mode"] == "order"
    rank0 = run.select("g", "lane", data_worker="rank0")[0].select("rect", "unit")
    assert [b.attrs["data-unit"] for b in rank0] == ["0", "2", "4"]
    xs = [float(b.attrs["x"]) for b in rank0]
    assert xs == sorted(xs) and len(set(xs)) == 3
    assert [(n.attrs["data-root"], n.attrs["data-victim"]) for n in run.select("path", "cascade-link")] == [("2", "4")]
    assert [c.attrs["data-family"] for c in run.select("article", "card.root-fault")] == ["nccl-error"]
    assert run.select(cls="systematic") == []


@needs_chromium
def test_a_thousand_units_render_and_stay_readable(tmp_path: Path) -> None:
    run = big_run(1000, 20)
    page = write_report([run], tmp_path / "big.html")
    dom = dump_dom(page, tmp_path)
    bars = dom.select("rect", "unit")
    assert len(bars) == 1000
    assert all(float(b.attrs["width"]) >= MIN_BAR for b in bars)
    labels = dom.select("text", "unit-label")
    assert 0 < len(labels) < 1000  # thinned: only bars wide enough carry one
    assert len(dom.select("g", "lane")) == 20
    # a dense run scrolls sideways inside its box instead of squeezing bars below their minimum
    assert dom.select("div", "tl-scroll")
    assert BASE_W < float(dom.select("svg", "tl-chart")[0].attrs["width"]) <= MAX_W
    shot = tmp_path / "big.png"
    res = chromium(page, tmp_path, f"--screenshot={shot}", "--window-size=1400,1000", "--hide-scrollbars")
    assert res.returncode == 0 and shot.stat().st_size > 10_000, res.stderr[-2000:]


# --------------------------------------------------------------------------- without a browser
def big_run(n: int, workers: int) -> dict:
    """n units on `workers` lanes, one cascade on every fifth worker."""
    t0 = datetime(2026, 4, 1, 8, 0, tzinfo=timezone.utc)
    units, roots = [], []
    per = n // workers
    for w in range(workers):
        t = t0
        dead = None
        for i in range(per):
            k = w * per + i
            status, family, role, root = "ok", None, None, None
            if dead is not None:
                status, family, role, root, dur = "failed", "vllm-engine-dead", "cascade", dead, 2
            elif w % 5 == 0 and i == per // 2:
                status, family, role, dur = "failed", "cuda-oom", "root", 90
                roots.append({"unit": str(k), "worker": f"rank{w}", "family": "cuda-oom", "evidence": ["OOM <b>"]})
                dead = str(k)
            else:
                dur = 60 + (k * 37) % 400
            units.append({"unit": str(k), "worker": f"rank{w}", "status": status, "family": family, "role": role,
                          "root": root, "start": t.isoformat(), "time": (t + timedelta(seconds=dur)).isoformat(),
                          "fingerprint": None})
            t += timedelta(seconds=dur + 1)
    return {"run": "big", "units": units, "roots": roots, "systematic": [{"family": "cuda-oom", "workers": len(roots)}],
            "problems": [], "summary": f"{n} units"}


def test_page_is_self_contained_and_escaped(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    # no network assets: no external script, stylesheet, font, image or import
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", text)
    assert "@import" not in text and "url(http" not in text and "@font-face" not in text
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)
    # the injected line is in the file only in escaped form
    assert INJECTED not in text
    assert esc(INJECTED) in text
    assert text.count("<script") == 1


def test_attributes_are_quoted_and_escaped() -> None:
    nasty = 'w"><img src=x onerror=alert(1)>'
    run = {"run": "r<1>", "units": [
        {"unit": "a&b", "worker": nasty, "status": "failed", "family": "x\"y", "role": "root", "root": None, "time": None},
        {"unit": "c", "worker": nasty, "status": "incomplete", "family": None, "role": "cascade", "root": "a&b", "time": None},
    ], "roots": [{"unit": "a&b", "worker": nasty, "family": 'x"y', "evidence": ["<img src=x onerror=alert(2)>"]}],
        "systematic": [], "problems": ["<b>bad</b> file"], "summary": "<i>s</i>"}
    text = render([run])
    assert "<img" not in text and "<b>bad" not in text and "<i>s" not in text
    root = parse(text)
    assert {n.attrs["data-worker"] for n in root.select("g", "lane")} == {nasty}
    assert [(n.attrs["data-root"], n.attrs["data-victim"]) for n in root.select("path", "cascade-link")] == [("a&b", "c")]
    assert root.select("li", "problem")[0].text() == "<b>bad</b> file"


def test_layout_fills_missing_times_between_neighbours() -> None:
    t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    run = {"run": "r", "units": [
        {"unit": "1", "worker": "w", "status": "ok", "time": t.isoformat()},
        {"unit": "2", "worker": "w", "status": "ok", "time": None},
        {"unit": "3", "worker": "w", "status": "ok", "time": (t + timedelta(minutes=20)).isoformat()},
        {"unit": "4", "worker": "v", "status": "ok", "time": None},
    ]}
    lay = layout(run)
    assert lay.mode == "time"
    b = lay.by_key
    assert b["2"].start == t + timedelta(minutes=10)
    assert b["1"].x < b["2"].x < b["3"].x
    assert b["4"].start == t  # a lane with no time at all starts at the run's first timestamp


def test_report_of_the_bundled_example_tells_the_story(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = runner.invoke(app, ["report", str(REPO / "examples" / "sweep-0412"), "--out", str(out), "-j", "1"])
    assert result.exit_code == 1, result.output
    root = parse(out.read_text(encoding="utf-8"))
    assert len(root.select("g", "lane")) == 8
    assert len(root.select("rect", "unit")) == 42
    assert len(root.select(cls="root-marker")) == 7
    assert len(root.select("path", "cascade-link")) == 28
    assert {c.attrs["data-family"] for c in root.select("article", "card.root-fault")} == {"vllm-h100-prefix-cache-ima"}
    assert root.select(cls="systematic")[0].attrs["data-workers"] == "7"
    clean = [n for n in root.select("g", "lane") if n.attrs["data-lost"] == "0"]
    assert [n.attrs["data-worker"] for n in clean] == ["gpu5"]


def test_report_of_a_missing_dir_is_an_input_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["report", str(tmp_path / "nope"), "--out", str(tmp_path / "r.html"), "-j", "1"])
    assert result.exit_code == 2, result.output


RUNS_FIXTURES = sorted(p for p in (FILES / "runs").glob("*") if p.is_dir()) if (FILES / "runs").is_dir() else []


@pytest.mark.parametrize("run_dir", RUNS_FIXTURES, ids=[p.name for p in RUNS_FIXTURES])
def test_report_matches_the_run_object(run_dir: Path) -> None:
    """Every layout of the runs fixtures: one bar per unit, one marker per root, one link per victim."""
    from sigclass.runs.parallel import analyse

    run = analyse([str(run_dir)], n_jobs=1).runs[0]
    d = run_dict(run)
    root = parse(render([d]))
    assert len(root.select("rect", "unit")) == len(d["units"])
    assert {n.attrs["data-worker"] for n in root.select("g", "lane")} == {str(u["worker"] or "?") for u in d["units"]}
    assert sorted(n.attrs["data-unit"] for n in root.select(cls="root-marker")) == sorted(r["unit"] for r in d["roots"])
    assert sorted((n.attrs["data-root"], n.attrs["data-victim"]) for n in root.select("path", "cascade-link")) == sorted(
        (r["unit"], v) for r in d["roots"] for v in r["victims"])
    assert len(root.select("article", "card.root-fault")) == len(d["roots"])
    assert len(root.select("li", "problem")) == len(d["problems"])
    assert len(root.select(cls="systematic")) == len(d["systematic"])
