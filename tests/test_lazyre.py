"""Module-level patterns compiled on first use (`sigclass.text.lazyre`): the same answers as `re.compile`, and a
small clean scan never compiles the shapes of failures it does not have."""

from __future__ import annotations

import pickle
import re
import subprocess
import sys

from sigclass.text.lazyre import lazy, LazyPattern

from conftest import OOM


def test_lazy_pattern_answers_as_the_compiled_one():
    src = r"(?P<rank>\d+)x(?P<rest>[a-z]*)"
    texts = ["12xab", "x", "zz 3xq 45xyz", "", "7x7x"]
    for flags in (0, re.IGNORECASE):
        lz, rx = lazy(src, flags), re.compile(src, flags)
        assert lz.pattern == rx.pattern
        for t in texts + [t.upper() for t in texts]:
            for name in ("search", "match", "fullmatch"):
                a, b = getattr(lz, name)(t), getattr(rx, name)(t)
                assert (a and (a.span(), a.groupdict())) == (b and (b.span(), b.groupdict()))
            assert lz.findall(t) == rx.findall(t)
            assert [m.span() for m in lz.finditer(t)] == [m.span() for m in rx.finditer(t)]
            assert lz.sub("-", t) == rx.sub("-", t) and lz.split(t) == rx.split(t)
        assert (lz.groups, lz.groupindex, lz.flags) == (rx.groups, rx.groupindex, rx.flags)


def test_pattern_text_is_known_without_compiling_and_a_bad_pattern_fails_on_use():
    lz = lazy(r"ab(")
    assert lz.pattern == "ab(" and "_rx" not in vars(lz)
    try:
        lz.search("ab")
    except re.error:
        pass
    else:
        raise AssertionError("a bad pattern must raise re.error when used")


def test_lazy_pattern_pickles_to_the_same_pattern():
    lz = lazy(r"rank (\d+)", re.IGNORECASE)
    lz.search("x")  # compiled: the copy is still a lazy pattern of the same text and flags
    back = pickle.loads(pickle.dumps(lz))
    assert isinstance(back, LazyPattern) and back.pattern == lz.pattern
    assert back.search("RANK 3").group(1) == "3"


def test_a_small_clean_scan_compiles_no_failure_shape(tmp_path):
    log = tmp_path / "clean.log"
    log.write_text("INFO step 1 loss 2.0\n" * 50)
    code = ("import sys, sigclass\n"
            "from sigclass.scan.shapes import FAULTS, REPORTS\n"
            "res = sigclass.classify(sys.argv[1], signatures='regex')\n"
            "print(len(res.findings), [s.name for s in (*FAULTS, *REPORTS) if '_rx' in vars(s.confirm)])\n")
    p = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, timeout=120)
    assert p.stdout.split(None, 1) == ["0", "[]\n"], p.stderr
    log.write_text("INFO step 1\n" + OOM)
    p = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, timeout=120)
    assert int(p.stdout.split(None, 1)[0]) >= 1, p.stderr  # the OOM is still found


def test_condition_regexes_compile_on_use_and_answer_as_regex_does():
    import regex

    from sigclass.ledger.patterns import compile_condition, LazyPattern

    src = r"H100|H200|GH200"
    cond = compile_condition(src)
    cond = compile_condition(src)  # the second time the text is known to compile
    assert isinstance(cond, LazyPattern) and cond.pattern == src
    for v in ("NVIDIA H100 80GB HBM3", "A100-SXM4", "GH200", ""):
        assert (cond.search(v) is None) == (regex.compile(src).search(v) is None)
    back = pickle.loads(pickle.dumps(cond))
    assert back == cond and back.search("H200 x").group() == "H200"
    try:
        compile_condition(r"(unclosed")
    except regex.error:
        pass
    else:
        raise AssertionError("a condition that does not compile must raise")


def test_a_condition_that_does_not_compile_is_still_reported_at_load(tmp_path, monkeypatch):
    from sigclass.errors import SignatureError
    from sigclass.ledger.parse import parse_signature

    monkeypatch.setenv("SIGCLASS_CACHE_DIR", str(tmp_path / "cache"))
    good = ("id: demo-family\ntitle: Demo failure\nrole: root\nmatch:\n  any:\n    - 'DemoError: something broke'\n"
            "conditions:\n  require:\n    gpu: 'H100|H200'\nmitigation: Fix the demo.\nprobes: [Run it again.]\n")
    for _ in range(2):  # first load, then with the text known to compile
        sig = parse_signature(good, "sigs/demo-family.yaml")
        assert [(k, v.pattern) for k, v in sig.require] == [("gpu", "H100|H200")]
        assert sig.require[0][1].search("NVIDIA H100") is not None
    try:
        parse_signature(good.replace("'H100|H200'", "'H100|(H200'"), "sigs/demo-family.yaml")
    except SignatureError as exc:
        assert "regex does not compile" in str(exc)
    else:
        raise AssertionError("a bad condition must be reported")
