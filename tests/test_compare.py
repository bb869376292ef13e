"""`sigclass compare`: discriminating facts, probes judged on runs, verdicts; facts one worker prints for its node or job."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sigclass.cli.app import app
from sigclass.diagnosis.analysis import compare
from sigclass.runs.parallel import analyse

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
H100 = "vllm-h100-prefix-cache-ima"
runner = CliRunner()


def _make_sweep():
    spec = importlib.util.spec_from_file_location("make_sweep", EXAMPLES / "make_sweep.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["make_sweep"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def story(tmp_path_factory):
    """The three runs of the story, and variants: the A100 run fails too; the A100 run with other engine arguments."""
    ms = _make_sweep()
    root = tmp_path_factory.mktemp("story")
    out = {}
    for key, st in ms.STORIES.items():
        out[key] = root / st.name
        ms.write_run(out[key], st, 412)
    out["a100-fails"] = root / "a100-fails"
    ms.write_run(out["a100-fails"], dataclasses.replace(ms.STORIES["a100"], crash_at={0: 1, 3: 0, 6: 2}), 412)
    out["a100-eager"] = root / "a100-eager"
    ms.write_run(out["a100-eager"], dataclasses.replace(ms.STORIES["a100"], enforce_eager=True), 412)
    return out


def _compare(ledger, *dirs):
    batch = analyse([str(d) for d in dirs], n_jobs=1)
    return compare(batch.runs, ledger)


def _probe(c, family, start):
    return next(p for p in c["probes"] if p["family"] == family and p["probe"].startswith(start))


def _verdict(c, family):
    return next(v for v in c["verdicts"] if v["family"] == family)


def test_generator_writes_the_shipped_example_runs(story):
    for key in ("sweep", "a100", "short"):
        shipped = EXAMPLES / story[key].name
        for f in sorted(shipped.iterdir()):
            assert (story[key] / f.name).read_bytes() == f.read_bytes(), f


def test_story_confirms_the_h100_family(ledger, story):
    c = _compare(ledger, story["sweep"], story["a100"], story["short"])
    assert c["units"] == 42 + 42 + 16
    facts = [d["fact"] for d in c["discriminating"]]
    assert facts[0] == "gpu_model"
    assert "prompt_tokens_p99" in facts
    gpu = c["discriminating"][0]
    assert {v["value"]: (v["failed"], v["total"]) for v in gpu["values"]} == {"H100": (35, 58), "A100": (0, 42)}
    assert gpu["p"] < 1e-6
    assert _probe(c, H100, "Run the identical code")["status"] == "supports"
    assert _probe(c, H100, "On the same H100")["status"] == "supports"
    assert _probe(c, H100, "On the same H100")["runs"] == ["sweep-0412", "sweep-0412-short"]
    assert _probe(c, H100, "On the same GPU")["status"] == "not-run"
    v = _verdict(c, H100)
    assert v["status"] == "confirmed"
    assert c["not_comparable"] == []


def test_a100_failing_too_refutes_and_points_to_the_generic_family(ledger, story):
    c = _compare(ledger, story["sweep"], story["a100-fails"])
    assert _probe(c, H100, "Run the identical code")["status"] == "refutes"
    v = _verdict(c, H100)
    assert v["status"] == "refuted"
    assert v["points_to"] == "cuda-illegal-memory-access"


def test_other_engine_arguments_are_not_comparable(ledger, story):
    c = _compare(ledger, story["sweep"], story["a100-eager"])
    assert [d["fact"] for d in c["not_comparable"]] == ["enforce_eager"]
    assert c["not_comparable"][0]["values"] == ["off", "on"]
    assert c["verdicts"] == []
    assert _probe(c, H100, "Run the identical code")["status"] == "not-run"


def test_the_failing_sweep_alone_is_open_with_the_cheapest_probe_next(ledger, story):
    c = _compare(ledger, story["sweep"])
    assert {p["status"] for p in c["probes"]} == {"not-run"}
    v = _verdict(c, H100)
    assert v["status"] == "open"
    assert v["next"].startswith("On the same H100/H200, run a short-prompt probe")
    assert "short-prompt probe" in v["why"]


def test_json_contract_through_the_cli(story):
    r = runner.invoke(app, ["compare", "--format", "json", "-j", "1", str(story["sweep"]), str(story["a100"]), str(story["short"])])
    assert r.exit_code == 1, r.output
    data = json.loads(r.output)
    assert set(data) >= {"runs", "units", "discriminating", "probes", "verdicts", "not_comparable"}
    for d in data["discriminating"]:
        assert set(d) >= {"fact", "values", "p"}
        assert all(set(v) >= {"value", "failed", "total"} for v in d["values"])
    for p in data["probes"]:
        assert set(p) >= {"family", "probe", "status", "runs"} and p["status"] in ("supports", "refutes", "not-run")
    for v in data["verdicts"]:
        assert set(v) >= {"family", "status", "points_to", "why"} and v["status"] in ("confirmed", "refuted", "open")


def test_text_names_the_counts(story):
    r = runner.invoke(app, ["compare", "-j", "1", str(story["sweep"]), str(story["a100"])])
    assert "gpu_model=H100: 35/42 failed; A100: 0/42" in r.output
    assert "confirmed" in r.output


def test_a_missing_run_is_one_line_not_a_traceback(tmp_path):
    r = runner.invoke(app, ["compare", "-j", "1", str(tmp_path / "nope")])
    assert r.exit_code == 2
    assert "Traceback" not in r.output


def test_verdicts_go_to_the_history_once(story, tmp_path):
    from sigclass.diagnosis.record import read_verdicts

    args = ["compare", "-j", "1", "--history", str(tmp_path / "h"), str(story["sweep"]), str(story["a100"])]
    assert runner.invoke(app, args).exit_code == 1
    assert runner.invoke(app, args).exit_code == 1
    df = read_verdicts(tmp_path / "h")
    assert df.height == 1
    row = df.row(0, named=True)
    assert row["record"] == "root-cause-confirmed" and row["family"] == H100
    assert row["runs"] == ["sweep-0412", "sweep-0412-a100"]


def test_a_worker_without_the_gpu_line_borrows_its_nodes(ledger, tmp_path):
    run = tmp_path / "sweep"
    shutil.copytree(EXAMPLES / "sweep-0412", run)
    log = run / "gpu1.log"
    log.write_text("".join(x for x in log.read_text().splitlines(keepends=True) if "NVIDIA H100" not in x))
    got = analyse([str(run)], n_jobs=1).runs[0]
    root = next(r for r in got.roots if r.worker == "gpu1")
    assert root.family == H100
    assert any("gpu_model=H100 80GB HBM3" in n and "h100-node-03" in n for n in root.notes)
    text = runner.invoke(app, ["runs", "-j", "1", str(run)]).output
    assert "note: gpu_model=H100 80GB HBM3 is a fact of the same node h100-node-03" in text
    unit = next(u for u in got.units if u.unit == root.unit)
    assert unit.facts["gpu_model"].startswith("H100")


def test_no_borrowing_across_nodes_with_other_gpus(ledger, tmp_path, story):
    """One run on two nodes: a worker that prints neither its GPU nor its host cannot be given either node's GPU."""
    run = tmp_path / "two-nodes"
    shutil.copytree(EXAMPLES / "sweep-0412", run)
    for i, src in enumerate(sorted(story["a100"].iterdir())[:2]):
        shutil.copy(src, run / f"a100-{src.name}")
    log = run / "gpu1.log"
    log.write_text("".join(x for x in log.read_text().splitlines(keepends=True) if "NVIDIA H100" not in x and "host=" not in x))
    got = analyse([str(run)], n_jobs=1).runs[0]
    assert next(r for r in got.roots if r.worker == "gpu1").family == "cuda-illegal-memory-access"


def test_python_api_and_mcp_tool_agree(story, tmp_path):
    import sigclass
    from sigclass.errors import InputError
    from sigclass.mcp_tools import Config, Tools

    c = sigclass.compare([story["sweep"], story["short"]], n_jobs=1)
    assert isinstance(c, sigclass.Comparison)
    assert c.verdict(H100)["status"] == "confirmed"
    assert sigclass.Comparison.from_dict(c.to_dict()) == c
    tools = Tools(Config(roots=[story["sweep"].parent]))
    out = tools.call("compare_runs", {"paths": [story["sweep"].name, story["short"].name]})
    assert tools.check_output("compare_runs", out) is None
    assert out["verdicts"] == c.to_dict()["verdicts"]
    with pytest.raises(InputError):
        tools.call("compare_runs", {"paths": [str(tmp_path)]})  # outside the roots
    with pytest.raises(InputError):
        tools.call("compare_runs", {"paths": "sweep-0412"})


def test_ledger_supersede_writes_both_links_once(tmp_path):
    from sigclass.ledger.pack import load_ledger

    for f in (REPO / "signatures").iterdir():
        if f.suffix in (".yaml", ".log"):
            shutil.copy(f, tmp_path / f.name)
    before = (tmp_path / f"{H100}.yaml").read_text()
    args = ["ledger", "supersede", H100, "--by", "cuda-illegal-memory-access", "--ledger", str(tmp_path),
            "--note", "The A100 run with identical engine arguments crashed the same way (runs s, s-a100)."]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    after = (tmp_path / f"{H100}.yaml").read_text()
    assert after.startswith(before.split("caveats:")[0])  # the rest of the file is untouched
    lg = load_ledger([tmp_path], shipped=False)
    old, new = lg[H100], lg["cuda-illegal-memory-access"]
    assert [s.id for s in old.superseded_by] == ["cuda-illegal-memory-access"]
    assert [s.id for s in new.supersedes] == [H100]
    assert any(c.startswith("Red herring here: The A100 run") for c in old.caveats)
    assert runner.invoke(app, [*args[:-1], "another note"]).output.startswith(f"{H100} is already superseded")
    assert (tmp_path / f"{H100}.yaml").read_text() == after
    r = runner.invoke(app, ["ledger", "lint", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert runner.invoke(app, ["ledger", "supersede", "no-such", "--by", H100, "--note", "x"]).exit_code == 2


def test_ledger_supersede_never_edits_an_installed_pack(tmp_path, monkeypatch):
    """On an installed package the edit goes to the user's signature folder, which later loads read over the pack."""
    import sigclass.ledger.pack as pack
    from sigclass.authoring.supersede import supersede

    site = tmp_path / "lib" / "python3.11" / "site-packages" / "sigclass" / "signatures"
    site.mkdir(parents=True)
    for f in (REPO / "signatures").iterdir():
        if f.suffix in (".yaml", ".log"):
            shutil.copy(f, site / f.name)
    before = {f.name: f.read_bytes() for f in site.iterdir()}
    monkeypatch.setattr(pack, "shipped_dir", lambda: site)
    monkeypatch.setenv("SIGCLASS_DATA_DIR", str(tmp_path / "data"))
    changed = supersede(pack.load_ledger(), H100, "cuda-illegal-memory-access", "Same crash on an A100.")
    mine = tmp_path / "data" / "signatures"
    assert sorted(changed) == sorted([mine / f"{H100}.yaml", mine / "cuda-illegal-memory-access.yaml"])
    assert {f.name: f.read_bytes() for f in site.iterdir()} == before  # the installed pack is untouched
    lg = pack.load_ledger()
    assert [s.id for s in lg[H100].superseded_by] == ["cuda-illegal-memory-access"]
    assert [s.id for s in lg["cuda-illegal-memory-access"].supersedes] == [H100]
    assert not [s.id for s in pack.load_ledger(user=False)[H100].superseded_by]
    assert supersede(pack.load_ledger(), H100, "cuda-illegal-memory-access", "again") == []  # once only


def test_lint_checks_probe_declarations(tmp_path):
    from sigclass.errors import SignatureError
    from sigclass.ledger.pack import load_ledger

    src = (REPO / "signatures" / "cuda-oom.yaml").read_text()
    bad = src.replace("vary: {prompt_tokens_p99: lower}", "vary: {batch_sizes: lower}") \
             .replace("points_to: vllm-orphan-gpu-memory", "points_to: no-such-family")
    (tmp_path / "cuda-oom.yaml").write_text(bad)
    shutil.copy(REPO / "signatures" / "cuda-oom.log", tmp_path / "cuda-oom.log")
    r = runner.invoke(app, ["ledger", "lint", str(tmp_path)])
    assert r.exit_code == 1
    assert "probe names fact 'batch_sizes'" in r.output and "points_to 'no-such-family'" in r.output
    (tmp_path / "cuda-oom.yaml").write_text(src.replace("expect: clean", "expect: maybe"))
    with pytest.raises(SignatureError, match="probe expect must be one of clean, fails"):
        load_ledger([tmp_path], shipped=False, strict=True)
    plain = src.split("probes:")[0] + "probes:\n  - Just a sentence, as before.\n" + "caveats:" + src.split("caveats:", 1)[1]
    (tmp_path / "cuda-oom.yaml").write_text(plain)
    lg = load_ledger([tmp_path], shipped=False, strict=True)
    assert lg["cuda-oom"].probes == ("Just a sentence, as before.",)
    assert not lg["cuda-oom"].probe_decls[0].declared


def test_shipped_pack_declares_the_probes(ledger):
    full = [s.id for s in ledger if s.probe_decls and all(p.declared for p in s.probe_decls)]
    assert H100 in full and len(full) >= 5
    assert [p.text for p in ledger[H100].probe_decls] == list(ledger[H100].probes)


def test_report_of_several_runs_has_a_comparison_section(story, tmp_path):
    out = tmp_path / "r.html"
    r = runner.invoke(app, ["report", "-j", "1", "--out", str(out), str(story["sweep"]), str(story["a100"]), str(story["short"])])
    assert r.exit_code == 1, r.output
    page = out.read_text()
    assert '<section class="comparison">' in page
    assert '<tr class="fact" data-fact="gpu_model">' in page
    assert page.count('class="probe" data-family="vllm-h100-prefix-cache-ima" data-status="supports"') == 2
    assert 'class="verdict" data-family="vllm-h100-prefix-cache-ima" data-status="confirmed"' in page
    one = tmp_path / "one.html"
    runner.invoke(app, ["report", "-j", "1", "--out", str(one), str(story["sweep"])])
    assert 'class="comparison"' not in one.read_text()


def _shard_run(root: Path, name: str, host: str, fail: dict[int, str], eager: str = "False") -> Path:
    """A run of one file per shard (layout 1): gpuN/shard_N.log on `host`; `fail` maps a shard to its last lines."""
    run = root / name
    for i in range(4):
        d = run / f"gpu{i}"
        d.mkdir(parents=True)
        lines = [f"2026-05-01 10:0{i}:00,000 INFO host={host} worker=gpu{i} torch=2.8.0+cu128 vllm=0.10.2",
                 f"2026-05-01 10:0{i}:01,000 INFO device cuda:0 -> NVIDIA A100-SXM4-80GB (sm_80)",
                 f"2026-05-01 10:0{i}:02,000 INFO model=/models/Llama-3.1-8B max_model_len=8192 enforce_eager={eager}",
                 f"2026-05-01 10:0{i}:03,000 INFO [shard {i}] starting"]
        if i in fail:
            lines += fail[i].splitlines() + [f"2026-05-01 10:0{i}:09,000 ERROR [shard {i}] failed"]
        else:
            lines.append(f"2026-05-01 10:0{i}:09,000 INFO [shard {i}] done")
        (d / f"shard_{i}.log").write_text("\n".join(lines) + "\n")
    return run


XID79 = ("[812044.301562] NVRM: Xid (PCI:0000:ca:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
         "Traceback (most recent call last):\n  File \"train.py\", line 3, in step\n    loss.item()\n"
         "RuntimeError: CUDA error: unspecified launch failure")


def test_any_family_with_declared_probes(ledger, tmp_path):
    """The hardware family, judged by its own probes: another host runs clean, and the Xid the log shows is a hardware one."""
    bad = _shard_run(tmp_path, "node7", "node-7", {2: XID79})
    good = _shard_run(tmp_path, "node8", "node-8", {})
    c = _compare(ledger, bad, good)
    fam = "gpu-hardware-fault"
    assert _probe(c, fam, "Re-run the same shard on another GPU")["status"] == "supports"
    assert _probe(c, fam, "dmesg")["status"] == "supports"
    assert _probe(c, fam, "dcgmi")["status"] == "not-run"
    assert _verdict(c, fam)["status"] == "confirmed"
    # the same fault following the shard onto the other host refutes it
    again = _shard_run(tmp_path, "node8-fails", "node-8", {2: XID79.replace("79,", "13,").split("\n", 1)[1]})
    c = _compare(ledger, bad, again)
    assert _probe(c, fam, "Re-run the same shard on another GPU")["status"] == "refutes"
    v = _verdict(c, fam)
    assert v["status"] == "refuted" and v["points_to"] == "cuda-illegal-memory-access"


def test_kept_fact_that_differs_blocks_the_probe(ledger, tmp_path):
    bad = _shard_run(tmp_path, "node7", "node-7", {2: XID79})
    good = _shard_run(tmp_path, "node8", "node-8", {}, eager="True")
    c = _compare(ledger, bad, good)
    assert c["not_comparable"] == [{"fact": "enforce_eager", "values": ["off", "on"], "runs": ["node7", "node8"]}]
    assert _probe(c, "gpu-hardware-fault", "Re-run the same shard on another GPU")["status"] == "not-run"
    assert c["verdicts"] == []


def test_unit_facts_come_from_the_units_own_lines():
    run = analyse([str(EXAMPLES / "sweep-0412")], n_jobs=1).runs[0]
    text = (EXAMPLES / "sweep-0412" / "gpu0.log").read_text()
    for u in [u for u in run.units if u.worker == "gpu0"][:3]:
        part = text.split(f"[shard {u.unit}] starting", 1)[1]
        p99 = part.split("p99=", 1)[1].split(" ", 1)[0]
        assert u.facts["prompt_tokens_p99"] == p99
        assert u.facts["gpu_model"] == "H100 80GB HBM3" and u.facts["host"] == "h100-node-03"


def test_stats_lists_the_recorded_root_causes(story, tmp_path):
    h = tmp_path / "h"
    assert runner.invoke(app, ["runs", "-j", "1", "--history", str(h), str(story["sweep"])]).exit_code == 1
    assert runner.invoke(app, ["compare", "-j", "1", "--history", str(h), str(story["sweep"]), str(story["a100"])]).exit_code == 1
    r = runner.invoke(app, ["stats", str(h)])
    assert r.exit_code == 0, r.output
    assert "root causes confirmed or refuted" in r.output and "root-cause-confirmed" in r.output
    data = json.loads(runner.invoke(app, ["stats", "--format", "json", str(h)]).output)
    assert data["root_causes"][0]["family"] == H100
    assert data["root_causes"][0]["runs"] == "sweep-0412, sweep-0412-a100"
