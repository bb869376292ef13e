"""How the `sigclass` command reads its arguments and prints its help, as grep and ripgrep users expect.

* No command means `scan`: `... | sigclass -f jsonl`, `sigclass -f json < x.log`
  and `sigclass train.log` all scan, with scan's options.
* Help is plain text: options with a short metavar (`--out FILE`), no type
  names, commands listed with their whole first sentence, wrapped between
  words rather than cut.
"""

from __future__ import annotations

import difflib
import os
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

try:  # typer >= 0.20 carries its own copy of click
    from typer.core import _click as click
except ImportError:  # pragma: no cover - older typer runs on click itself
    import click  # type: ignore[no-redef]

DEFAULT_COMMAND = "scan"
ROOT_OPTIONS = frozenset({"-h", "--help", "--version", "-V"})
# the order people look for them in, not the order the modules register them
ORDER = ("scan", "runs", "compare", "report", "stats", "explain", "ledger", "suggest", "train", "eval", "schema", "mcp",
         "completion")


def _metavar(param: Any) -> str:
    """`FILE`, `N`, `text|json`: what goes after an option or stands for an argument in help."""
    if param.metavar:
        return str(param.metavar)
    desc = getattr(param, "type_descriptor", None)  # typer >= 0.20
    if desc is not None:
        choices = desc.choices if getattr(desc, "is_choice", False) else None
    else:
        choices = getattr(getattr(param, "type", None), "choices", None)
    if choices:
        return "|".join(str(getattr(c, "value", c)) for c in choices)
    return param.name.upper()


def _record(param: Any, ctx: Any) -> tuple[str, str] | None:
    """One help row (names, text) for a parameter, with no type annotations."""
    if getattr(param, "hidden", False):
        return None
    help_text = getattr(param, "help", None) or ""
    if param.param_type_name == "argument":
        name = _metavar(param) + ("..." if param.nargs != 1 and not str(param.metavar or "").endswith("...") else "")
        return name, help_text
    names = ", ".join(sorted(param.opts, key=lambda o: (o.startswith("--"), o)))
    if param.secondary_opts:
        names += " / " + ", ".join(param.secondary_opts)
    if not param.is_flag:
        names += " " + _metavar(param)
    default = param.default
    if not param.is_flag and param.show_default is not False and default not in (None, [], ()) \
            and not callable(default):
        shown = getattr(default, "value", default)
        help_text = f"{help_text} [default: {shown}]".strip()
    return names, help_text


def _format_params(cmd: Any, ctx: Any, formatter: Any) -> None:
    args, opts = [], []
    for param in cmd.get_params(ctx):
        rec = _record(param, ctx)
        if rec is not None:
            (args if param.param_type_name == "argument" else opts).append(rec)
    if args:
        with formatter.section("Arguments"):
            formatter.write_dl(args)
    if opts:
        with formatter.section("Options"):
            formatter.write_dl(opts)


def _usage_pieces(cmd: Any, ctx: Any) -> list[str]:
    pieces = [cmd.options_metavar] if cmd.options_metavar else []
    for param in cmd.get_params(ctx):
        if param.param_type_name == "argument":
            name = _metavar(param)
            if param.nargs != 1 and not name.endswith("..."):
                name += "..."
            pieces.append(name if param.required else f"[{name}]")
    return pieces


def first_paragraph(text: str | None) -> str:
    """The help's first paragraph on one line (the command list wraps it)."""
    para = (text or "").strip().split("\n\n", 1)[0]
    return " ".join(para.split())


class Command(TyperCommand):
    """A subcommand whose help has no type names and wraps between words."""

    def format_options(self, ctx: Any, formatter: Any) -> None:
        _format_params(self, ctx, formatter)

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return _usage_pieces(self, ctx)


class Group(TyperGroup):
    """The root command (and `sigclass ledger`): plain help, and no command means `scan`."""

    default_command: str | None = None

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if self.default_command and not ctx.resilient_parsing:
            args = self._with_default(ctx, list(args))
        return super().parse_args(ctx, args)

    def _with_default(self, ctx: Any, args: list[str]) -> list[str]:
        """Put `scan` in front unless a command (or a root option such as --version) comes first."""
        if not args:
            stdin = _stdin_is_terminal()
            return args if stdin else [self.default_command]
        first = args[0]
        if first in self.commands or first in ROOT_OPTIONS:
            return args
        if not first.startswith("-") and not os.path.exists(first) and os.sep not in first and "." not in first:
            near = difflib.get_close_matches(first, list(self.commands), n=1, cutoff=0.75)
            if near:
                raise click.exceptions.UsageError(
                    f"{first!r} is neither a command nor a file; did you mean `sigclass {near[0]}`?"
                    f" (to scan a file named {first}, write `sigclass scan {first}`)", ctx=ctx)
        return [self.default_command, *args]

    def list_commands(self, ctx: Any) -> list[str]:
        names = list(self.commands)
        rank = {n: i for i, n in enumerate(ORDER)}
        return sorted(names, key=lambda n: (rank.get(n, len(ORDER)), names.index(n)))

    def format_options(self, ctx: Any, formatter: Any) -> None:
        _format_params(self, ctx, formatter)
        self.format_commands(ctx, formatter)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.short_help or first_paragraph(cmd.help)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _stdin_is_terminal() -> bool:
    import sys

    try:
        return sys.stdin is None or sys.stdin.isatty()
    except (AttributeError, ValueError):
        return True


class App(typer.Typer):
    """A Typer app whose commands and groups use the classes above."""

    def __init__(self, *args: Any, default_command: str | None = None, **kw: Any) -> None:
        kw.setdefault("cls", type("RootGroup", (Group,), {"default_command": default_command}))
        kw.setdefault("rich_markup_mode", None)
        kw.setdefault("pretty_exceptions_show_locals", False)
        kw.setdefault("context_settings", {"help_option_names": ["-h", "--help"]})
        super().__init__(*args, **kw)

    def command(self, *args: Any, cls: type | None = None, **kw: Any):  # type: ignore[override]
        return super().command(*args, cls=cls or Command, **kw)
