"""`sigclass train`, `sigclass eval` and `sigclass suggest`: learned signatures and drafts of new ones."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
import sys
from typing import Annotated, Optional

import typer

from sigclass.cli.common import TextJson, app, err, LedgerOpt, load_ledger_or_exit
from sigclass.errors import InputError, ModelError, SigclassError

CorpusOpt = Annotated[Optional[list[Path]], typer.Option("--corpus", metavar="DIR", help="Extra corpus folder laid out as <label>/<name>.log (repeatable).")]
NoShippedOpt = Annotated[bool, typer.Option("--no-shipped-corpus", help="Use only the --corpus folders.")]
GroupsOpt = Annotated[str, typer.Option(
    "--cv-groups", metavar="thread|project",
    help="What a cross-validation fold holds out whole: the files of a thread, or every thread of a project.")]



def _dirs(corpus: list[Path] | None, no_shipped: bool) -> list[Path]:
    from sigclass.learn.corpus import shipped_corpus

    dirs: list[Path] = []
    if not no_shipped:
        shipped = shipped_corpus()
        if not shipped:
            if not corpus:
                raise ModelError("no shipped corpus in this installation (it lives in the source tree); install "
                                 "with `pip install -e '.[all]'` in a checkout, or pass --corpus DIR --no-shipped-corpus")
            err("no shipped corpus in this installation (it lives in the source tree; `pip install -e .` in a "
                "checkout uses it); only the --corpus folders are used")
        else:
            dirs.extend(shipped)
    dirs.extend(corpus or [])
    if not dirs:
        raise ModelError("no corpus folder: pass --corpus DIR")
    return dirs


def _groups(value: str) -> str:
    from sigclass.learn.corpus import GROUPINGS

    if value not in GROUPINGS:
        raise typer.BadParameter(f"{value!r}: name one of {', '.join(GROUPINGS)}", param_hint="--cv-groups")
    return value


def _fail(exc: Exception) -> None:
    err(exc)
    raise typer.Exit(2) from None


def _check_writable(target: Path) -> None:
    """Exit with one line when the model file cannot be written where asked."""
    if target.is_dir():
        _fail(InputError(f"{target}: is a directory; name the model file to write, e.g. {target / 'model.joblib'}"))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _fail(InputError(f"{target.parent}: cannot make the folder for the model ({exc.strerror or exc})"))
    if not os.access(target.parent, os.W_OK):
        _fail(InputError(f"{target.parent}: not writable; name a model file in a folder you can write"))


@app.command()
def train(
    *,
    corpus: CorpusOpt = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", metavar="FILE", help="Model file to write (default: the per-user data folder).")] = None,
    no_shipped_corpus: NoShippedOpt = False,
    pin: Annotated[bool, typer.Option("--pin", help="Also pin the file's sha256 as the shipped model (only for classifier/sigclass/data/model.joblib).")] = False,
    folds: Annotated[int, typer.Option(metavar="N", help="Cross-validation folds used to choose the abstain threshold.", min=2)] = 5,
    cv_groups: GroupsOpt = "project",
    ledger: LedgerOpt = None,
) -> None:
    """Train the learned signatures on the corpus and write a verified model file."""
    from sigclass.folders import data_dir
    from sigclass.learn import artefact
    from sigclass.learn.corpus import corpus_files
    from sigclass.learn.examples import corpus_phrasings
    from sigclass.learn.train import train as train_model

    lg, _ = load_ledger_or_exit(ledger)
    target = out or data_dir() / "model.joblib"
    shipped_target = (artefact.shipped_dir() / artefact.SHIPPED_FILE).resolve()
    if pin and target.resolve() != shipped_target:
        _fail(ModelError(f"--pin only applies to the shipped model {shipped_target}, not {target}"))
    _check_writable(target)  # before minutes of training, not after
    try:
        groups = _groups(cv_groups)
        dirs = _dirs(corpus, no_shipped_corpus)
        trained = train_model(corpus_files(dirs), lg, folds=folds, phrasings=corpus_phrasings(dirs),
                              groups=groups)
        trained.meta["command"] = "sigclass train " + " ".join(sys.argv[2:]) if len(sys.argv) > 1 else "sigclass train"
        digest = artefact.save(trained.pipeline, trained.meta, target)
    except (SigclassError, OSError) as exc:
        _fail(exc)
    where = artefact.trust(target, digest)
    if pin:
        # the scanner reads the compact export (plain arrays, no unpickling); both files are pinned
        from sigclass.learn import compact

        try:
            data = compact.export(trained.pipeline, trained.meta, source_sha256=digest)
            (artefact.shipped_dir() / compact.COMPACT_FILE).write_bytes(data)
        except (SigclassError, OSError) as exc:
            _fail(exc)
        artefact.write_pin(digest, compact_digest=hashlib.sha256(data).hexdigest())
    m = trained.meta
    typer.echo(f"trained on {m['corpus_files']} files, {m['training_blocks']} blocks, {len(m['labels'])} labels "
               f"in {trained.seconds:.1f}s")
    typer.echo(f"cv ({m['cv']['folds']}-fold, by {m['cv']['groups']}): macro-F1 {m['cv']['macro_f1']:.3f}, known-family accuracy "
               f"{m['cv']['known_accuracy']:.3f}, quiet on clean/unknown {m['cv']['quiet_on_clean']:.3f}; "
               f"abstain threshold {m['threshold']:.2f}")
    typer.echo(f"wrote {target} ({target.stat().st_size / 1024:.0f} KiB, sha256 {digest[:16]}); trusted in {where}")
    if pin:
        typer.echo(f"pinned as the shipped model in {artefact.shipped_dir() / artefact.PIN_FILE}")
    elif target.resolve() != shipped_target:
        typer.echo(f"use it with: sigclass scan --model {target} ...")


@app.command("eval")
def eval_(
    *,
    corpus: CorpusOpt = None,
    no_shipped_corpus: NoShippedOpt = False,
    folds: Annotated[int, typer.Option(metavar="N", help="Number of stratified folds (by file).", min=2)] = 5,
    cv_groups: GroupsOpt = "project",
    score_dirs: Annotated[Optional[list[Path]], typer.Option(
        "--score", metavar="DIR", help="Also score this labelled folder with the model trained here (repeatable).")] = None,
    fmt: Annotated[TextJson, typer.Option("--format", "-f", help="text or json.")] = TextJson.text,
    ledger: LedgerOpt = None,
) -> None:
    """Cross-validation over the training part, then the held-out part scored by a model trained on the rest."""
    import time

    from sigclass.learn.corpus import corpus_files
    from sigclass.learn.examples import corpus_phrasings
    from sigclass.learn.predictor import Predictor
    from sigclass.learn.scoring import KINDS, breakdown, score_modes
    from sigclass.learn.train import train as train_model

    lg, _ = load_ledger_or_exit(ledger)
    t0 = time.perf_counter()
    scored: dict[str, dict[str, dict]] = {}
    try:
        groups = _groups(cv_groups)
        dirs = _dirs(corpus, no_shipped_corpus)
        trained = train_model(corpus_files(dirs), lg, folds=folds, phrasings=corpus_phrasings(dirs),
                              groups=groups)
        predictor = Predictor(trained.pipeline, trained.meta["threshold"], trained.meta)
        targets = [(d, "heldout") for d in dirs if corpus_files([d], split="heldout")]
        targets += [(Path(d), "all") for d in score_dirs or []]
        for d, split in targets:
            modes = score_modes(lg, d, predictor, split=split)
            scored[f"{d} ({split})"] = {mode: breakdown(rows, d) for mode, rows in modes.items()}
    except (SigclassError, ValueError, OSError) as exc:
        _fail(exc)
    res = trained.cv
    s = res.scores
    if fmt == TextJson.json:
        doc = {"folds": res.folds, "groups": res.groups, "threshold": res.threshold, "threshold_both": res.threshold_both,
               "macro_f1": s["macro_f1"], "known_accuracy": s["known_accuracy"],
               "quiet_on_clean": s["quiet_on_clean"], "files": s["files"], "per_label": s["per_label"],
               "confusion": s["confusion"], "threshold_curve": res.curve, "threshold_curve_both": res.curve_both,
               "modes": res.modes, "scored": scored,
               "seconds": round(time.perf_counter() - t0, 2)}
        typer.echo(json.dumps(doc, indent=2, sort_keys=True))
        return
    if sys.stdout.isatty():
        _rich_eval(res)
    else:
        _plain_eval(res)
    typer.echo(f"training part: {s['files']} files, {res.folds} folds, abstain threshold {res.threshold:.2f} "
               f"(chosen by CV); macro-F1 {s['macro_f1']:.3f}; known-family accuracy {s['known_accuracy']:.3f}; "
               f"quiet on clean/unknown {s['quiet_on_clean']:.3f}")
    typer.echo(f"training part, out of fold, folds by {res.groups} (thresholds: learned {res.threshold:.2f}, both {res.threshold_both:.2f}): "
               "mode, right / files, known-family accuracy, unknown stays unknown, clean stays quiet")
    for mode, m in (res.modes or {}).items():
        typer.echo(f"  {mode:8} {m['right']:>4}/{m['files']:<4} {m['known_accuracy']:6.1%} {m['unknown_quiet']:6.1%} "
                   f"{m['clean_quiet']:6.1%}")
    for name, modes in scored.items():
        kinds = [k for k in KINDS if any(k in cells for cells in modes.values())]
        typer.echo(f"{name}: right / files per signature mode")
        typer.echo(f"  {'mode':8}" + "".join(f" {k:>16}" for k in kinds))
        for mode, cells in modes.items():
            typer.echo(f"  {mode:8}" + "".join(
                f" {cells[k]['right']:>4}/{cells[k]['files']:<4} {cells[k]['accuracy']:6.1%}" if k in cells
                else f" {'-':>16}" for k in kinds))
    typer.echo(f"{time.perf_counter() - t0:.1f}s")


def _plain_eval(res) -> None:
    per = res.scores["per_label"]
    typer.echo(f"{'label':32} {'precision':>9} {'recall':>7} {'f1':>6} {'files':>6}")
    for lab, v in sorted(per.items()):
        typer.echo(f"{lab:32} {v['precision']:9.3f} {v['recall']:7.3f} {v['f1']:6.3f} {v['support']:6d}")
    typer.echo("confusion (expected -> predicted: files):")
    for exp, row in sorted(res.scores["confusion"].items()):
        cells = ", ".join(f"{got}: {n}" for got, n in sorted(row.items(), key=lambda t: -t[1]))
        typer.echo(f"  {exp} -> {cells}")


def _rich_eval(res) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console()
    per = res.scores["per_label"]
    t = Table(title="per family (file level)")
    for col in ("label", "precision", "recall", "f1", "files"):
        t.add_column(col, justify="left" if col == "label" else "right")
    for lab, v in sorted(per.items()):
        t.add_row(lab, f"{v['precision']:.3f}", f"{v['recall']:.3f}", f"{v['f1']:.3f}", str(v["support"]))
    con.print(t)
    labels = sorted(per)
    cm = Table(title="confusion (rows: expected, columns: predicted #)")
    cm.add_column("#", justify="right")
    cm.add_column("expected")
    for i in range(len(labels)):
        cm.add_column(str(i), justify="right")
    for i, exp in enumerate(labels):
        row = res.scores["confusion"].get(exp, {})
        cm.add_row(str(i), exp, *[(str(row.get(got, "")) if row.get(got) else "·") for got in labels])
    con.print(cm)


# --------------------------------------------------------------------------- suggest

@app.command()
def suggest(
    paths: Annotated[list[Path], typer.Argument(help="Log files or run directories.")],
    *,
    out: Annotated[Path, typer.Option("--out", "-o", metavar="DIR", help="Folder for the draft ledger files.")] = Path("drafts"),
    top: Annotated[int, typer.Option(metavar="N", help="Write drafts for this many groups at most.", min=1)] = 5,
    min_count: Annotated[int, typer.Option(metavar="N", help="Smallest group worth a draft.", min=1)] = 2,
    corpus: CorpusOpt = None,
    no_shipped_corpus: NoShippedOpt = False,
    fmt: Annotated[TextJson, typer.Option("--format", "-f", help="text or json.")] = TextJson.text,
    ledger: LedgerOpt = None,
) -> None:
    """Group unknown failures by masked template and write draft signatures for the top groups."""
    from sigclass.authoring import suggest as sg
    from sigclass.learn.corpus import shipped_corpus

    lg, _ = load_ledger_or_exit(ledger)
    clean_dirs: list[Path] = []
    if not no_shipped_corpus:
        clean_dirs.extend(part / "clean" for part in shipped_corpus() or [])
    clean_dirs.extend(Path(c) / "clean" for c in corpus or [])
    try:
        groups = sg.group_unknowns(paths, lg)
        drafts = sg.write_drafts(groups, out, lg, top=top, min_count=min_count,
                                 clean_dirs=[d for d in clean_dirs if d.is_dir()])
    except SigclassError as exc:
        _fail(exc)
    if fmt == TextJson.json:
        typer.echo(json.dumps({"groups": [g.to_dict() for g in groups], "drafts": [d.to_dict() for d in drafts]},
                              indent=2, sort_keys=True))
        return
    if not groups:
        typer.echo("no unknown failures found")
        return
    typer.echo(f"{'#':>3} {'count':>5} {'runs':>4} {'workers':>7}  template")
    for i, g in enumerate(groups[: max(top, 10)], 1):
        typer.echo(f"{i:3d} {g.count:5d} {len(g.runs):4d} {len(g.workers):7d}  {g.template[:120]}")
    if not drafts:
        typer.echo(f"no group has {min_count} or more members; nothing to draft (see --min-count)")
    for d in drafts:
        if d.written:
            typer.echo(f"draft {d.path} ({d.members} members, pattern {d.pattern!r})")
        else:
            typer.echo(f"no draft for group {d.group + 1}: {d.reason}")
    if any(d.written for d in drafts):
        typer.echo(f"check them with: sigclass ledger lint {out}")
