"""What opens, continues and closes a failure block: the generic triggers and line shapes the scanner asks the prefilter for."""

from __future__ import annotations

from sigclass.scan.shapes import FAULT_TRIGGER, REPORT_TRIGGER
from sigclass.text.lazyre import lazy
from sigclass.text.workers import EXIT_TRIGGER


GAP_LINES = 40  # a traceback with no line of its own for this many lines is closed

GAP_AFTER_EXC = 3  # ... and once its exception line was seen, after this many

MAX_BLOCK_LINES = 400

LIVE_QUIET = 0.3  # seconds: on a live pipe, a finished failure's stream this quiet means it has ended

MAX_MSG_LINES = 12  # continuation lines after an exception line

# Generic triggers: ids above the ledger's pattern ids.
G_BASE = 1 << 20

G_TB, G_EXC, G_CPP, G_FATAL, G_ABORT, G_MARK, G_KV, G_EXIT, G_SHAPE, G_REPORT = range(G_BASE, G_BASE + 10)

TERMINATE = "terminate called after throwing an instance of"  # libstdc++'s word for an uncaught C++ exception

GENERIC = {
    G_TB: r"Traceback \(most recent call last\)",
    # an exception name where a message can start: line start, or after a prefix/header (`]`, `:`, `)`, `>`,
    # a log level), not quoted mid-sentence as in `retrying (ConnectionResetError: ...)`
    # (`Name: message`, or a bare `Name` / `Name:` ending the line: `AssertionError`, a ChildFailedError summary;
    # a bare `Exception: ...` too, as vLLM's engine raises it)
    G_EXC: r"(?:^|[\]:)>|] ?|[A-Z]{4,8}:? |- )(?:[A-Za-z_][A-Za-z0-9_.]*(?:Error|Exception|\.error)|Exception)(?:\[[^\]]*\])?"
           r"(?:: |: *$|$)",
    G_CPP: TERMINATE,
    # a fatal one-line error: CPython's, or a usage error: argparse's (`prog: error: unrecognized arguments: ...`,
    # exit 2), clap's (`error: invalid value 'True' for '--disable-custom-kernels'`), llama.cpp's (`error: invalid
    # argument: -hf`);
    # an HTTP error an OpenAI-compatible client raised (openai's APIStatusError: `Error code: 400 - {...}`),
    # c10d's last word when a worker cannot reach the store (its retries before that are warnings)
    G_FATAL: r"Fatal Python error: |[A-Za-z0-9_.-]+: error: (?:unrecognized arguments: |the following arguments are required: "
             r"|argument [A-Za-z0-9_/-]+: |ambiguous option: )|Error code: [45][0-9][0-9] - "
             # clap's (Rust: TGI, TEI launchers) and llama.cpp's usage errors, on a line of their own
             r"|error: (?:invalid value '|unexpected argument '|the following required arguments were not provided"
             r"|Found argument '[^']*' which wasn't expected|invalid argument: )"
             r"|\[c10d\] The client socket has failed to connect to any network address",
    # a process the shell reports dead of a signal no family names (SIGABRT, SIGFPE, SIGILL, SIGTRAP)
    G_ABORT: r"(?:Aborted|Floating point exception|Illegal instruction|Trace/breakpoint trap) +\(core dumped\)",
    G_MARK: r"[Ss]hard[ =_-]?[0-9]+",
    G_KV: r"(?:worker|rank|gpu)=[A-Za-z0-9_.-]+",
    G_EXIT: EXIT_TRIGGER,  # a launcher's word that a worker ended, and how (text/workers.py)
    G_SHAPE: FAULT_TRIGGER,  # a failure printed without a Python traceback (scan/shapes.py)
    G_REPORT: REPORT_TRIGGER,  # a word that something failed, kept until the source ends (scan/shapes.py)
}


BLOCK_STARTERS = {G_TB, G_EXC, G_CPP, G_FATAL, G_ABORT, G_SHAPE}

# a served request logged with its prompt (vLLM's request logger): what the prompt quotes, a traceback
# included, is the user's text, not a failure of this process; checked only on lines that would start a block
PAYLOAD = lazy(r"Received request [^ ]+: prompt: ")

# (after a bracketed tag no prefix rule knows, `[rankx]: ValueError: ...`, as long as it is not a log level)
EXC_LINE = lazy(r"(?:\[(?!(?:INFO|WARN|WARNING|DEBUG|TRACE|NOTICE)\])[\w.,:-]{1,32}\]:? )?"
                r"(?:[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|\.error)|[A-Z]\w*Error|Exception)"
                r"(?:\[[^\]]*\])?(?::|$)")

# a launcher's own report that a child failed: torchelastic's ChildFailedError (torchrun, accelerate), a wrapper's
# CalledProcessError (`Command '[...]' returned non-zero exit status 1.`)
LAUNCHER_REPORT = lazy(r"returned non-zero exit status \d+|ChildFailedError")

CHAIN = lazy(r"(?:The above exception was the direct cause|During handling of the above exception"
                    r"|-- Process \d+ terminated with the following error)")  # the last: torch.multiprocessing.spawn


# a shell's or a batch system's word that a process ended, printed after the process's own last line: never a line
# of an exception's message, so it ends the failure block above it (a user's exception then a `Terminated` is that
# exception's failure, the stop a finding of its own)
SHELL_STOP = lazy(r"(?:\x1b?\[[0-9;]*m)*(?:(?:Killed|Terminated)(?:\x1b?\[[0-9;]*m)* *$|\[\d+\][-+]? +(?:Killed|Terminated|Exit \d+) "
                        r"|srun: (?:error: |Job step aborted|forcing job termination)|slurmstepd: error: \*\*\* (?:JOB|STEP) "
                        r"|[\w./-]+: line \d+: +\d+ +(?:Killed|Terminated) )")


# CPython's word that the exception printed below it was ignored: one raised in a finalizer (`__del__`), a weakref
# callback or an exit function, after which the interpreter goes on or exits as it would have (the exit status is
# not changed): `Exception ignored in: <function X.__del__ at 0x7f...>` (3.13: `Exception ignored while calling
# deallocator ...`, `Exception ignored in atexit callback ...`), `Error in atexit._run_exitfuncs:` (before 3.13)
IGNORED = lazy(r"(?:Exception ignored (?:in|while|on)\b|Error in atexit\._run_exitfuncs:)")
# threading's excepthook above the traceback of a thread that died (`Exception in thread Thread-3 (worker):`,
# `Exception in thread ray_print_logs:`): the thread ended, not the process (the JVM's form quotes the name)
THREAD_DIED = lazy(r"^Exception in thread (?P<name>[^\s\"][^\"]*):\s*$")

# a traceback of multiprocessing's resource tracker, the helper process that unlinks shared memory and semaphores at
# exit (`File ".../multiprocessing/resource_tracker.py", line 209, in main` / `cache[rtype].remove(name)` /
# `KeyError: '/loky-20105-_31z_nje'`, a CPython bookkeeping error joblib's and Ray's workers print as they end):
# its own failure, after the run's work, never the run's
_TRACKER_FRAME = lazy(r'File "[^"]*multiprocessing[/\\]resource_tracker\.py", line \d+')


def tracker_noise(bodies: list[str]) -> bool:
    """Whether every frame of a block is in multiprocessing's resource tracker (and it has one)."""
    frames = [b for b in bodies if b.lstrip().startswith('File "')]
    return bool(frames) and all(_TRACKER_FRAME.search(b) for b in frames)


# a traceback a logger printed at its warning level (`logger.warning(..., exc_info=True)`): each of its lines under the
# level word (torch._dynamo's `[2023-11-29 11:05:15,440] torch._dynamo.convert_frame: [WARNING] Traceback ...` when a
# frame WON'T CONVERT and runs eagerly, glog's `W1203 14:53:36.262000 140 convert_frame.py:1] ...`, `WARNING:root:`);
# the program caught the exception and went on
_WARN_LEVEL = lazy(r"^W\d{4} \d\d:\d\d:\d\d|(?<![A-Za-z])WARN(?:ING)?(?![A-Za-z])")


def logged_as_warning(texts: list[str]) -> bool:
    """Whether a traceback block is a warning record's: its lines from the `Traceback` line through the exception line
    each carry a warning level before their text (a line or two after them, not of the record, may have run on)."""
    said = [x for x in texts if x.strip()]
    rest: list[str] = []  # each record line's text after its level word
    for x in said:
        m = _WARN_LEVEL.search(x, 0, 120)
        cut = x.find("Traceback (most recent call last)")
        if m is None or (cut >= 0 and m.start() > cut):
            break
        rest.append(x[m.end():].lstrip(" ]:-|"))
    if len(rest) < 3 or len(said) - len(rest) > 2 or "Traceback (most recent call last)" not in rest[0]:
        return False
    return any(EXC_LINE.match(x) for x in rest[1:])


# conda's CLI in a batch script whose shell never ran `conda init`: `conda activate` fails, the script goes on (in
# whatever environment it had); a job that then misses its packages fails with an error of its own
CONDA_NOT_INIT = "CommandNotFoundError: Your shell has not been properly configured to use 'conda activate'"


# a logger's warning that the program goes on without something (xformers: `A matching Triton is not available, some
# optimizations will not be enabled`, vLLM's `Module vllm.third_party.deep_gemm was found but failed to import`,
# logged with the ImportError it caught as exc_info)
FALLBACK_WARNING = lazy(r"\bWARN(?:ING)?\b.*(?:\bnot available\b|\bunavailable\b|will not be (?:enabled|used)"
                        r"|falling back|fall back to|\bdisabled\b|was found but failed to import)")
_IMPORT_EXC = lazy(r"(?:[A-Za-z_]\w*\.)*(?:ModuleNotFoundError|ImportError)(?::|$)")


def caught_import(bodies: list[str]) -> bool:
    """Whether a block's last exception line is an ImportError (or ModuleNotFoundError)."""
    for b in reversed(bodies):
        s = b.strip()
        if s and not b[:1].isspace() and EXC_LINE.match(s):
            return _IMPORT_EXC.match(s) is not None
    return False


# PaddlePaddle's enforce report (paddle/phi/core/enforce.cc), alone or as the message of a Python exception: a rule
# of dashes, `C++ Traceback (most recent call last):`, its frames numbered `0   paddle::...`, another rule, `Error
# Message Summary:`, a rule, then the error itself (`FatalError: ...`, `ResourceExhaustedError: ...`)
PADDLE_REPORT = lazy(r"-{10,}$|C\+\+ Traceback \(most recent call last\):$|Error Message Summary:$|\d+ {2,}\S")

# IPython's (and Jupyter's, Colab's) traceback: the exception's name, then `Traceback (most recent call last)` on one
# line; frames as `<ipython-input-16-f59..> in <module>()`, `Cell In[3], line 1`, `/path/x.py in f(a, b)` or `File
# /path/x.py:60, in f(a)`, code lines indented or under an arrow (`----> 3 model.fit(...)`), blank lines between,
# Colab's `11 frames` for the ones it folds; the exception line last
IPYTHON_HEAD = lazy(r"[A-Za-z_][\w.]*(?: {2,}|\t)Traceback \(most recent call last\)")
IPYTHON_FRAME = lazy(r"\d+ frames?$|<ipython-input-|Cell In ?\[|File [^\n]*:\d+, in |-*>|\S+ in \S+\(.*\)$")

CPP_CONT = lazy(r"(?:what\(\):|Exception raised from|frame #\d+:|terminate called|\*\*\* |\[\d+\] )")

MARKER = lazy(
    r"(?:\[\s*+)?[Ss]hard[ =_-]?(?P<unit>\d++)\]?\s*+[:\]]?\s*+(?:[-:|]\s*+)?(?:status=)?(?P<verb>[A-Za-z]++)"
)


# the verb first: `Starting shard_3 (1024 prompts)`
# (a verb starts a word, so that a search tries each word once; repeats are possessive: linear in the line)
MARKER_PRE = lazy(r"(?<![a-z])(?P<verb>[A-Za-z][a-z]++)\s++\[?[Ss]hard[ =_-]?(?P<unit>\d+)")  # not a log level

START_VERBS = {"start", "starting", "started", "begin", "beginning", "running"}

OK_VERBS = {"done", "finished", "completed", "complete", "succeeded", "success", "ok"}

FAIL_VERBS = {"failed", "error", "errored", "aborted", "failure"}

# a line that starts a new log record even without a header we know
NEW_RECORD = lazy(
    r"(?:\[?(?:INFO|WARNING|WARN|DEBUG|ERROR|CRITICAL|FATAL|TRACE|NOTICE)(?:[\s:|\]]|$)|\[?\d{4}-\d\d-\d\d|[IWEF]\d{4} \d"
    r"|\[[IW]\d{3,4} \d\d:\d\d:\d\d"  # torch's bracketed glog at info or warning level: `[I301 12:34:56.408 ...]`
    r"|[^|]{0,80}\d+%\||(?:Epoch|epoch|Step|step) \d)"
)


KV = lazy(r"(?:^|[\s,;(\[])(?P<key>worker|rank|gpu)=(?P<val>[A-Za-z0-9_.-]+)")
