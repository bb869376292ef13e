"""The Python API (classify, analyze_run, explain, list_gotchas), its records and the JSON Schemas."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import make_two_worker_run, OOM, SAMPLE_RUNS
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

import sigclass
from sigclass import api
from sigclass.cli.app import app
from sigclass.errors import InputError, SignatureError
from sigclass.ledger.families import CONTRACT_IDS
from sigclass.outputs import schemas
from sigclass.records import FINDING_KEYS

runner = CliRunner()

CASCADE = (
    "2026-03-01 12:00:00,000 INFO step 10\n" + OOM +
    "2026-03-01 12:10:00,000 ERROR [rank0]:[E301 12:10:00.000000000 ProcessGroupNCCL.cpp:616] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
    "ran for 600030 milliseconds before timing out.\n"
)
UNKNOWN = (
    "Traceback (most recent call last):\n"
    '  File "/app/x.py", line 1, in <module>\n'
    "FrobnicationError: the widget 0x7f3a could not be frobnicated\n"
)


def validate(doc: object, schema: dict) -> None:
    Draft202012Validator(schema).validate(doc)


def roundtrip_json(d: dict) -> dict:
    return json.loads(json.dumps(d))


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    """A two-worker run: worker_0 hits a CUDA OOM on shard 0 and loses shard 1 with it; worker_1 is fine."""
    return make_two_worker_run(tmp_path / "run-a")


# --------------------------------------------------------------------------- package surface

def test_package_exports_the_api():
    for name in ("classify", "analyze_run", "explain", "list_gotchas", "Classification", "RunAnalysis", "Gotcha"):
        assert name in sigclass.__all__
        assert getattr(sigclass, name) is getattr(api, name)
    assert issubclass(sigclass.InputError, sigclass.SigclassError)


# --------------------------------------------------------------------------- classify

def test_classify_text():
    res = sigclass.classify(OOM)
    assert isinstance(res, api.Classification)
    assert res.source == "<text>"
    assert res.families == ("cuda-oom",)
    f = res.findings[0]
    assert isinstance(f, api.FindingRecord)
    assert (f.family, f.role, f.method, f.confidence) == ("cuda-oom", "root", "regex", 1.0)
    assert f.known and f.mitigation and f.probes and f.fingerprint
    assert any("CUDA out of memory" in e for e in f.evidence)
    with pytest.raises(AttributeError):
        f.family = "other"  # frozen


def test_classify_path_and_str_path_read_the_file(tmp_path: Path):
    log = tmp_path / "train.log"
    log.write_text("INFO start\n" + OOM + "INFO start again\n" + OOM)
    by_path = sigclass.classify(log)
    by_str = sigclass.classify(str(log))
    assert by_path == by_str
    assert by_path.source == str(log)
    assert by_path.families == ("cuda-oom",)
    assert by_path.findings[0].count == 2  # repeats are folded, as `sigclass scan --format json` does
    assert by_path.findings[0].lines == (2, 7)


def test_str_that_looks_like_a_missing_path_is_refused_not_read_as_text(tmp_path: Path):
    missing = tmp_path / "nope.log"
    for s in (str(missing), "trian.log", "runs/gpu0.out"):
        with pytest.raises(InputError, match="no such file") as got:
            sigclass.classify(s)
        assert s in str(got.value) and "as_text=True" in str(got.value)
    assert sigclass.classify("trian.log", as_text=True).findings == ()  # explicitly text: no failure in it
    assert sigclass.classify(OOM.strip().splitlines()[-1]).families == ("cuda-oom",)  # one line of log is text
    with pytest.raises(InputError, match="no such file"):
        sigclass.classify(missing)  # a Path is always a path
    assert sigclass.classify(OOM.encode()).families == ("cuda-oom",)  # bytes are text
    assert sigclass.classify(b"trian.log").findings == ()  # even when they look like a path


def test_a_path_named_dash_is_never_stdin(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-").write_text(OOM)
    assert sigclass.classify(Path("-")).families == ("cuda-oom",)


def test_classify_directory_is_an_input_error(tmp_path: Path):
    with pytest.raises(InputError, match="is a directory"):
        sigclass.classify(tmp_path)


def test_clean_log_has_no_findings():
    res = sigclass.classify("INFO epoch 1 error_rate=0.000\nWARNING slow step\nINFO done\n")
    assert not res and res.findings == () and res.problems == ()


def test_secondary_points_at_its_root():
    res = sigclass.classify(CASCADE)
    assert res.families == ("cuda-oom", "nccl-watchdog-timeout")
    second = res.findings[1]
    assert second.role == "secondary"
    assert second.root["family"] == "cuda-oom"
    assert res.roots == (res.findings[0],)


def test_unknown_failure_has_a_fingerprint():
    a = sigclass.classify(UNKNOWN)
    b = sigclass.classify(UNKNOWN.replace("0x7f3a", "0x1234"))
    assert a.families == ("unknown",)
    assert a.findings[0].status == "unknown" and not a.findings[0].known
    assert a.findings[0].fingerprint == b.findings[0].fingerprint


def test_bad_arguments_are_sigclass_errors(tmp_path: Path):
    with pytest.raises(InputError, match="signatures must be one of"):
        sigclass.classify(OOM, signatures="magic")
    with pytest.raises(SignatureError, match="does not exist"):
        sigclass.classify(OOM, ledger=tmp_path / "missing.yaml")
    with pytest.raises(InputError, match="log text or a path"):
        sigclass.classify(42)  # type: ignore[arg-type]


def test_extra_ledger(tmp_path: Path):
    sig = tmp_path / "widget-frobnication.yaml"
    sig.write_text(
        "id: widget-frobnication\ntitle: Widget could not be frobnicated\nrole: root\n"
        "match:\n  any: ['FrobnicationError: ']\nmitigation: Unfrobnicate the widget first.\n"
        "probes: [Check the widget.]\n")
    res = sigclass.classify(UNKNOWN, ledger=[sig])
    assert res.families == ("widget-frobnication",)
    assert res.findings[0].mitigation == "Unfrobnicate the widget first."
    assert sigclass.explain("widget-frobnication", ledger=tmp_path).probes == ("Check the widget.",)
    assert "widget-frobnication" not in {g.id for g in sigclass.list_gotchas()}  # the shipped pack alone


def test_ledger_and_scanner_are_cached():
    assert api._engine(None, "regex") is api._engine(None, "regex")
    assert api.get_ledger() is api.get_ledger(None)


def test_classify_from_many_threads():
    from concurrent.futures import ThreadPoolExecutor

    texts = [OOM, CASCADE, UNKNOWN] * 6
    with ThreadPoolExecutor(max_workers=6) as pool:
        got = list(pool.map(sigclass.classify, texts))
    assert got == [sigclass.classify(t) for t in texts]


def test_classification_round_trips():
    for text in (OOM, CASCADE, UNKNOWN):
        res = sigclass.classify(text)
        d = res.to_dict()
        assert roundtrip_json(d) == d
        validate(d, schemas.CLASSIFICATION)
        for f in d["findings"]:
            validate(f, schemas.FINDING)
        assert api.Classification.from_dict(d) == res
        assert [api.FindingRecord.from_dict(f) for f in d["findings"]] == list(res.findings)


def test_finding_record_has_the_keys_of_a_scan_finding():
    f = sigclass.classify(OOM).findings[0]
    assert set(f.to_dict()) == set(FINDING_KEYS) | {"facts", "workers"}
    with pytest.raises(InputError, match="not a finding"):
        api.FindingRecord.from_dict({"family": "x"})


# --------------------------------------------------------------------------- explain / list

def test_explain_returns_the_whole_ledger_entry():
    g = sigclass.explain("vllm-engine-hang")
    assert isinstance(g, api.Gotcha)
    assert g.id == "vllm-engine-hang" and g.role == "root" and g.mitigation
    d = g.to_dict()
    assert d == api.get_ledger()["vllm-engine-hang"].to_dict()
    assert roundtrip_json(d) == d
    validate(d, schemas.GOTCHA)
    assert api.Gotcha.from_dict(d) == g


def test_explain_unknown_id_suggests_close_ones():
    with pytest.raises(InputError, match=r"no family 'cuda-om'; did you mean cuda-oom"):
        sigclass.explain("cuda-om")


def test_list_gotchas_covers_the_contract():
    got = sigclass.list_gotchas()
    assert all(isinstance(g, api.GotchaSummary) for g in got)
    assert set(CONTRACT_IDS) <= {g.id for g in got}
    doc = {"gotchas": [g.to_dict() for g in got]}
    validate(doc, schemas.GOTCHA_LIST)
    assert [api.GotchaSummary.from_dict(d) for d in doc["gotchas"]] == got


@pytest.mark.parametrize("family", CONTRACT_IDS)
def test_every_contract_gotcha_fits_the_schema(family: str):
    validate(sigclass.explain(family).to_dict(), schemas.GOTCHA)


# --------------------------------------------------------------------------- analyze_run

def test_analyze_run(run_dir: Path):
    from sigclass.runs.parallel import analyse

    res = sigclass.analyze_run(run_dir, n_jobs=1)
    assert isinstance(res, api.RunAnalysis)
    assert res.run == "run-a" and res.failed
    assert [r.family for r in res.roots] == ["cuda-oom"]
    root = res.roots[0]
    assert isinstance(root, api.RootFault) and root.unit == "0" and root.victims == ("1",)
    by_unit = {u.unit: u for u in res.units}
    assert by_unit["1"].role == "cascade" and by_unit["1"].root == "0"
    assert by_unit["2"].status == "ok"
    d = res.to_dict()
    # the run object is exactly what `sigclass runs --format json` prints for the run
    assert d == analyse([str(run_dir)], n_jobs=1).runs[0].to_dict()
    assert roundtrip_json(d) == d
    validate(d, schemas.RUN)
    assert api.RunAnalysis.from_dict(d) == res


def test_analyze_run_refuses_what_is_not_a_directory(tmp_path: Path):
    with pytest.raises(InputError, match="no such directory"):
        sigclass.analyze_run(tmp_path / "missing")
    (tmp_path / "a.log").write_text(OOM)
    with pytest.raises(InputError, match="not a directory"):
        sigclass.analyze_run(tmp_path / "a.log")


def test_systematic_fault_round_trips():
    s = api.SystematicFault("unknown", 3, "abc123")
    assert api.SystematicFault.from_dict(s.to_dict()) == s
    validate({"run": "r", "units": [], "roots": [], "systematic": [s.to_dict()], "problems": [], "summary": ""},
             schemas.RUN)


@pytest.mark.skipif(not SAMPLE_RUNS.is_dir(), reason="shared sample runs not present")
def test_sample_runs_fit_the_run_schema():
    for run in sorted(p for p in SAMPLE_RUNS.iterdir() if p.is_dir()):
        d = sigclass.analyze_run(run, n_jobs=1).to_dict()
        validate(d, schemas.RUN)
        for u in d["units"]:
            assert set(u) <= set(schemas.RUN["properties"]["units"]["items"]["properties"]), run.name
        for r in d["roots"]:
            assert set(r) <= set(schemas.RUN["properties"]["roots"]["items"]["properties"]), run.name


# --------------------------------------------------------------------------- schemas

@pytest.mark.parametrize("name", sorted(schemas.SCHEMAS))
def test_schemas_are_valid_draft_2020_12(name: str):
    s = schemas.schema(name)
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert s["type"] == "object"  # MCP output schemas must describe an object
    Draft202012Validator.check_schema(s)


def test_schemas_describe_every_emitted_field():
    assert set(schemas.FINDING["properties"]) == set(FINDING_KEYS) | {"facts", "workers"}
    assert set(schemas.GOTCHA["properties"]) == set(api.get_ledger()["cuda-oom"].to_dict())
    run_keys = set(api.RunAnalysis("r", "p", (), (), (), (), "").to_dict())
    assert set(schemas.RUN["properties"]) == run_keys
    root = api.RootFault("1", None, "cuda-oom", None, None, (), (), None, None, "", (), ())
    assert set(schemas.RUN["properties"]["roots"]["items"]["properties"]) == set(root.to_dict())


def test_schema_rejects_a_wrong_finding():
    d = sigclass.classify(OOM).findings[0].to_dict()
    d["role"] = "victim"
    with pytest.raises(Exception, match="victim"):
        validate(d, schemas.FINDING)


def test_scan_json_findings_fit_the_finding_schema(tmp_path: Path):
    log = tmp_path / "x.log"
    log.write_text(CASCADE + "2026-03-01 12:20:00,000 INFO restarting\n" + UNKNOWN)
    result = runner.invoke(app, ["scan", "--format", "json", str(log)])
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert [f["family"] for f in doc["findings"]] == ["cuda-oom", "nccl-watchdog-timeout", "unknown"]
    for f in doc["findings"]:
        validate(f, schemas.FINDING)


def test_schema_command():
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert {"finding", "run", "gotcha"} <= set(doc)
    for name in ("finding", "run", "gotcha"):
        result = runner.invoke(app, ["schema", name])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout) == schemas.SCHEMAS[name]
    result = runner.invoke(app, ["schema", "nope"])
    assert result.exit_code == 2
    assert "no schema 'nope'" in result.stderr


def test_schema_copies_are_independent():
    s = schemas.schema("finding")
    s["properties"].clear()
    assert schemas.FINDING["properties"]
    with pytest.raises(InputError):
        schemas.schema("nope")
