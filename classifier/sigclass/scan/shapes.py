"""Failures printed without a Python traceback: the line shapes that make them `unknown` findings.

Two kinds, each shape with lines it must match and lines it must not (tests/test_shapes.py runs them all):

- fault shapes open a failure block where they are printed, as an exception line does: a C++ `Check failed:`
  (glog, Ray's RAY_CHECK), the CUDACHECK / NCCLCHECK macros of NCCL's examples (`Failed: Cuda error f.cu:42 '...'`),
  a Rust or Go panic, libstdc++'s other `terminate called` lines, Ray's handler of an
  unhandled C++ exception, the shell's word for a death by SIGABRT / SIGFPE / SIGILL without a core dump,
  Hydra's compact config errors, an ERROR-level log line that names the exception it caught.
- report shapes only say that something failed: a launcher's or a tool's non-zero exit (`make: *** ... Error
  1`, `conda run` failed, `exited with code 1`, `exit status 1`, PyCharm's `Process finished with exit code
  1`), Hydra's `HYDRA_FULL_ERROR` hint, a served model's HTTP 4xx/5xx answer to a request. They are kept until
  the source ends; when nothing else in it explains them (no finding, or only a launcher stopping the siblings
  of the failed worker) the first of each template becomes an `unknown` finding, with the worker the line
  names. The launchers' exit lines (text/workers.py) count the same way. A report after a fault that was found
  belongs to that fault: no second finding.

Every trigger (the prefilter form) has a literal of at least four bytes; the confirm pattern runs only on the
lines the trigger hits, on the line without its worker prefix.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from sigclass.records import Finding
from sigclass.text.lazyre import lazy
from sigclass.text.lines import Line, fingerprint
from sigclass.text.workers import family_of_exit, worker_in_text
from sigclass.vocab import Method, Role, Status, UNKNOWN

if TYPE_CHECKING:
    from sigclass.scan.source import ScanState


@dataclass(frozen=True, slots=True)
class Shape:
    name: str
    trigger: str  # the prefilter form (Hyperscan / RE2 / regex alike)
    confirm: re.Pattern[str]  # on the line without its prefix; a `code` group is an exit code
    examples: tuple[str, ...]  # lines it must match
    counter: tuple[str, ...]  # lines it must not
    least: int = 1  # a report: how many of its lines a source must hold before they say something failed
    needles: tuple[str, ...] = ()  # one of these is in every line it takes: a cheap test before the pattern


def _s(name: str, trigger: str, confirm: str, examples: tuple[str, ...], counter: tuple[str, ...],
       least: int = 1) -> Shape:
    return Shape(name, trigger, lazy(confirm), examples, counter, least)


# Ray's line above the frames and exception of an actor's constructor that raised (a plain string: no regex syntax)
RAY_CREATION_TASK = "Exception raised in creation task: "

# an exception relayed from a Ray task or actor, as the line that names it starts
RAY_RELAY = lazy(r"^(?:ray\.exceptions\.)?Ray(?:Task|Actor)Error\([A-Za-z_][\w.]*\): ")

# retries and recoveries an ERROR line may announce: not the end of the run (words of the lower-cased line)
_RETRY = ("retry", "will try again", "falling back", "fallback", "ignore", "ignoring", "skipping")
_ATTEMPT = lazy(r"attempt \d+ of")


def _announces_retry(text: str) -> bool:
    low = text.lower()
    for w in _RETRY:
        if w in low:
            return True
    return "attempt" in low and _ATTEMPT.search(low) is not None

FAULTS: tuple[Shape, ...] = (
    # Rust's panic message (std::panicking): `thread 'main' panicked at src/main.rs:5:5:` (1.73+) or
    # `thread '<unnamed>' panicked at 'msg', src/lib.rs:5:5` (older)
    _s("rust-panic", r"' panicked at ", r"thread '[^']*' panicked at ",
       ("thread 'main' panicked at src/main.rs:10:5:",
        "thread '<unnamed>' panicked at 'called `Result::unwrap()` on an `Err` value: Os', tokenizers/src/lib.rs:12:5"),
       ("the worker panicked at the sight of the loss curve", "INFO thread pool panicked_at=0")),
    # Go's runtime: `panic: runtime error: index out of range [3] with length 3` (then `goroutine 1 [running]:`),
    # and its fatal errors that no recover() can catch
    # (and its report of a fatal signal in cgo code: `SIGABRT: abort`, then `PC=0x7f4e m=8 sigcode=...`)
    _s("go-panic", r"panic: |fatal error: all goroutines|fatal error: concurrent map|SIGABRT: abort"
                   r"|SIGILL: illegal instruction|SIGFPE: floating-point exception|SIGTRAP: trace trap",
       r"^(?:panic: [^ ]|fatal error: (?:all goroutines are asleep|concurrent map)"
       r"|SIG(?:ABRT: abort|ILL: illegal instruction|FPE: floating-point exception|TRAP: trace trap) *$)",
       ("panic: runtime error: invalid memory address or nil pointer dereference",
        "panic: open /data/x.json: no such file or directory",
        "fatal error: all goroutines are asleep - deadlock!", "2025-03-05 08:58:42 SIGABRT: abort"),
       ("Don't panic: the loss spike is expected", "INFO config: panic: false", "panic: ")),
    # glog's and Ray's fatal check: `F0315 12:00:00.1 123 foo.cc:42] Check failed: x == y (1 vs. 2)`,
    # `[... F 2613 2613] (raylet) node_manager.cc:42: Check failed: ...`
    _s("check-failed", r"Check failed: ", r"(?:\] |\.(?:cc|cpp|h|cu|cuh):\d+: |^)Check failed: ",
       ("F0315 12:00:00.123456  4242 tensor.cc:42] Check failed: dims == 2 (3 vs. 2)",
        "[2024-03-01 10:00:00,123 C 2613 2613] (raylet) node_manager.cc:1010: Check failed: worker != nullptr",
        "Check failed: status.ok() Bad status"),
       ("WARNING Health Check failed: timeout after 5s", "INFO health check failed: retrying",
        "liveness Check failed: 1 of 3")),
    # the check macros of NCCL's examples, copied into nccl-tests, vLLM's custom all-reduce, TensorRT-LLM's plugins and
    # many CUDA programs: `printf("Failed: Cuda error %s:%d '%s'\n", __FILE__, __LINE__, cudaGetErrorString(e));
    # exit(EXIT_FAILURE);` (NCCLCHECK: `Failed, NCCL error %s:%d '%s'`, MPICHECK: `Failed: MPI error %s:%d '%d'`):
    # the process exits right after the line
    _s("check-macro", r"Failed: Cuda error |Failed, NCCL error |Failed: NCCL error |Failed: MPI error ",
       r"(?:^|\] )Failed[:,] (?:Cuda|NCCL|MPI) error \S+:\d+ '[^']*'",
       ("Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:164 'invalid argument'",
        "Failed, NCCL error /src/plugins/ncclPlugin/allreducePlugin.cpp:183 'unknown result code'",
        "Failed: MPI error main.cu:42 '15'"),
       ("Failed: Cuda error checks are printed by CUDACHECK", "INFO retry after Failed: Cuda error x:1 'busy'")),
    # the check of PyTorch's THC library (before 1.5): `THCudaCheck FAIL file=... line=... error=N : message` on stderr,
    # then it raises `RuntimeError: cuda runtime error (N) : message` (printed once a process; its Warn twin,
    # `THCudaCheckWarn FAIL`, does not raise)
    _s("thc-check", r"THCudaCheck FAIL file=", r"^THCudaCheck FAIL file=\S+ line=\d+ error=\d+ : ",
       ("THCudaCheck FAIL file=/pytorch/torch/csrc/cuda/Module.cpp line=37 error=101 : invalid device ordinal",
        "THCudaCheck FAIL file=/opt/conda/conda-bld/pytorch_1556653114079/work/aten/src/THC/THCGeneral.cpp line=51 "
        "error=38 : no CUDA-capable device is detected"),
       ("THCudaCheckWarn FAIL file=/pytorch/aten/src/THC/THCStream.cpp line=50 error=29 : driver shutting down",
        "grep THCudaCheck FAIL file= in the logs")),
    # libstdc++'s other two words before abort() (the first, `terminate called after throwing an instance of`,
    # is a trigger of its own)
    _s("cpp-terminate", r"terminate called ", r"terminate called (?:recursively|without an active exception)",
       ("terminate called without an active exception", "terminate called recursively"),
       ("the run was terminate called by the user", "terminate called after throwing an instance of 'c10::Error'")),
    # Ray's terminate handler (src/ray/util/logging.cc): `Unhandled exception: <type>. what(): <message>`
    _s("ray-unhandled-cpp", r"Unhandled exception: |Unhandled unknown exception",
       r"Unhandled (?:exception: [^ ].*\. what\(\): |unknown exception\.)",
       ("[2024-11-29 18:44:18,452 E 26180 25180] (raylet.exe) logging.cc:108: Unhandled exception: "
        "class nlohmann::detail::type_error. what(): [json.exception.type_error.316] invalid UTF-8 byte",
        "[2024-01-01 00:00:00,000 E 1 1] logging.cc:110: Unhandled unknown exception."),
       ("Unhandled exception: see the docs", "INFO: no Unhandled exception: what(): in 3 runs")),
    # Ray's worker when an actor's constructor raised (python/ray/_private/worker.py), the error's frames below it
    _s("ray-creation-task", RAY_CREATION_TASK,
       r"(?:ERROR|Error)\b.* -- Exception raised in creation task: |^Exception raised in creation task: ",
       ("2021-06-25 16:24:01,207\tERROR worker.py:414 -- Exception raised in creation task: The actor died because "
        "of an error raised in its creation task, ray::Fail.__init__ (pid=43093, ip=192.168.86.154)",),
       ("INFO -- no Exception raised in creation task: all actors up",)),
    # the shell's report of a death by SIGABRT, SIGFPE, SIGILL or SIGTRAP without a core dump (with one, the
    # generic abort trigger has it): the bare word on its own line, or bash's job line
    _s("shell-abort", r"Aborted *$|Floating point exception *$|Illegal instruction *$|Trace/breakpoint trap *$"
                      r"|: line [0-9]+: +[0-9]+ +(?:Aborted|Floating point|Illegal instruction|Trace/breakpoint)",
       r"^(?:Aborted|Floating point exception|Illegal instruction|Trace/breakpoint trap) *$"
       r"|: line \d+: +\d+ +(?:Aborted|Floating point exception|Illegal instruction|Trace/breakpoint trap) ",
       ("Aborted", "Floating point exception", "Illegal instruction",
        "./run.sh: line 12: 41234 Aborted                 python train.py --cfg a.yaml"),
       ("INFO 03-01 12:00:00 [async_llm.py:406] Aborted request chatcmpl-42.", "Request was Aborted",
        "Aborted request 7 after 30s", "Training Aborted: resuming from step 40")),
    # Ray relaying the exception a remote task raised, on a line of its own:
    # `ray.exceptions.RayTaskError(RuntimeError): ray::TrainTrainable.train() (pid=1876, ip=...)`
    _s("ray-task-error", r"RayTaskError\(|RayActorError\(", RAY_RELAY.pattern,
       ("ray.exceptions.RayTaskError(RuntimeError): ray::TrainTrainable.train() (pid=1876, ip=100.97.252.234)",
        "RayTaskError(ValueError): ray::f() (pid=5, ip=10.0.0.1)"),
       ("INFO: no RayTaskError(s) so far", "caught RayTaskError(RuntimeError): retrying the trial")),
    # dask's worker when a task raised (distributed/worker.py): `distributed.worker - WARNING - Compute Failed`,
    # then the task's key, function and `Exception: ...` lines
    _s("dask-compute-failed", r"Compute Failed", r"distributed\.worker(?:\.\w+)? - WARNING - Compute Failed *$",
       ("2022-11-13 17:01:17,386 - distributed.worker - WARNING - Compute Failed",),
       ("INFO Compute Failed tasks: 0", "distributed.worker - INFO - Compute Failed earlier, rerun ok")),
    # UCX's (and Open MPI's) fatal-signal handler: `[host:176055:0:176055] Caught signal 8 (Floating point exception:
    # integer divide by zero)` (SIGSEGV and SIGBUS are families' own, SIGTERM and SIGINT a stop from outside)
    _s("caught-signal", r"Caught signal [4568] \(",
       r"Caught signal (?:4 \(Illegal instruction|5 \(Trace/breakpoint trap|6 \(Aborted|8 \(Floating point exception)",
       ("[ts-c26d273e-launcher:176055:0:176055] Caught signal 8 (Floating point exception: integer divide by zero)",
        "[node1:5:0:5] Caught signal 6 (Aborted)"),
       ("[node1:5:0:5] Caught signal 11 (Segmentation fault: address not mapped to object at address 0x8)",
        "Caught signal 8 (no, a test fixture) skipped")),
    # the failure-signal handlers of absl (`*** SIGABRT received at time=1700000000 on cpu 3 ***`) and glog
    # (`*** SIGFPE (@0x7f...) received by PID 5 (TID 0x7f...) from PID 5; stack trace: ***`). glog's first line,
    # `*** Aborted at 1592991226 (unix time) try "date -d @1592991226" if you are using GNU date ***`, is printed for
    # every signal, before `PC: @ ...` and the line naming the signal: that line says what happened (a SIGSEGV or
    # SIGBUS line is a family's, SIGABRT, SIGFPE, SIGILL and SIGTRAP this shape's). Under glog's own prefix
    # (`W1120 09:43:20.044389 1234 init.cc:234] `, PaddlePaddle's) each line is a record of its own, so a block
    # opened at `Aborted at` ended before the signal's line and stood as an unknown failure in front of it
    _s("failure-signal", r"\*\*\* SIG(?:ABRT|FPE|ILL|TRAP) (?:received at time=|\(@0x)",
       r"^\*\*\* SIG(?:ABRT|FPE|ILL|TRAP) (?:received at time=\d+|\(@0x[0-9a-f]+\) received by PID)",
       ("*** SIGABRT received at time=1700000000 on cpu 3 ***",
        "*** SIGFPE (@0x3e800004e7e) received by PID 20094 (TID 0x7fa86fc9df00) from PID 20094; stack trace: ***"),
       ("INFO *** Aborted at the user's request", "*** SIGABRT handler installed ***",
        '*** Aborted at 1592991226 (unix time) try "date -d @1592991226" if you are using GNU date ***')),
    # Apple's frameworks (Metal, Metal Performance Shaders: PyTorch's MPS backend) assert and abort the process:
    # `/AppleInternal/.../MPSNDArray.mm:724: failed assertion `[MPSNDArray initWithDevice:descriptor:] Error: ...'`,
    # `-[MTLDebugComputeCommandEncoder setBuffer:offset:atIndex:]:1254: failed assertion `...'`
    _s("apple-failed-assertion", r"failed assertion `", r"(?:\.(?:mm|m|cpp|c|h)|\]):\d+: failed assertion `",
       ("/AppleInternal/Library/BuildRoots/c651a45f/Library/Caches/com.apple.xbs/Sources/MetalPerformanceShaders/"
        "MPSCore/Types/MPSNDArray.mm:724: failed assertion `[MPSNDArray initWithDevice:descriptor:] Error: total "
        "bytes of NDArray > 2**32'",
        "-[MTLDebugComputeCommandEncoder setBuffer:offset:atIndex:]:1254: failed assertion `Set Buffer Validation'"),
       ("INFO test_mps.py: 3 failed assertion `checks' skipped", "the failed assertion `x > 0` in the docs")),
    # libstdc++'s message line of an uncaught exception when the `terminate called ...` line above it is lost
    # (interleaved streams): `  what():  basic_string::substr`
    _s("cpp-what", r"what\(\): ", r"^what\(\): ",
       ("what():  stoi", "  what():  std::bad_array_new_length"),
       ("INFO: what(): is printed by libstdc++", "the what(): line of a report")),
    # the JVM's uncaught-exception handler: `Exception in thread "main" java.lang.IllegalStateException: ...`
    _s("jvm-uncaught", r"Exception in thread \"",
       r"^Exception in thread \"[^\"]*\" (?:[\w$]+\.)*[\w$]*(?:Exception|Error)(?::|$)",
       ('Exception in thread "main" java.lang.IllegalArgumentException: Unsupported class file major version 61',
        'Exception in thread "dispatcher-event-loop-1" java.lang.OutOfMemoryError: Java heap space'),
       ('INFO: no Exception in thread "main" so far', 'WARN Exception in thread "main" handled, retrying')),
    # CPython itself when the script it was told to run is not there (exit 2):
    # `python: can't open file '/work/train.py': [Errno 2] No such file or directory`
    _s("python-no-script", r"can't open file '", r"can't open file '[^']*': \[Errno \d+\] ",
       ("/usr/bin/python3: can't open file '/work/train.py': [Errno 2] No such file or directory",
        "can't open file 'train.py': [Errno 2] No such file or directory"),
       ("WARNING: can't open file 'cache.json', starting empty",)),
    # click's (and typer's) usage errors, printed after `Usage: ...` and `Try '... --help' for help.` (exit 2)
    _s("click-usage", r"Error: Invalid value for |Error: No such option|Error: Missing option |Error: Missing argument "
                      r"|Error: Got unexpected extra argument",
       r"^Error: (?:Invalid value for |No such option|Missing option |Missing argument |Got unexpected extra argument)",
       ("Error: Invalid value for '--model': Path 'llama' does not exist.", "Error: No such option: --tp-size",
        "Error: Missing option '--config'."),
       ("INFO Error: Invalid value for x was corrected", "Validation Error: Missing option rendered as default")),
    # c10d's last word when a worker gives up connecting to the store (its retries before are warnings)
    _s("c10d-timeout", r"\[c10d\] The client socket has timed out after ",
       r"\[c10d\] The client socket has timed out after \d+",
       ("[E socket.cpp:922] [c10d] The client socket has timed out after 1800s while trying to connect to "
        "(10.0.0.1, 29500).",),
       ("[W socket.cpp:663] [c10d] The client socket has failed to connect to [node1]:29500 (errno: 22 - Invalid "
        "argument).",)),
    # Hydra's compact error for a config it cannot find or override (hydra/_internal/config_loader_impl.py),
    # printed with no traceback before the HYDRA_FULL_ERROR hint
    _s("hydra-config", r"Could not find '|Could not load '|Could not override '|Cannot find primary config '",
       r"^(?:In '[^']+': )?(?:Could not (?:find|load|override) '[^']*'|Cannot find primary config ')",
       ("In 'config_quadrotor': Could not find 'task_deploy/track_poly'",
        "Could not override 'trainer.gpus'.", "Cannot find primary config 'train'. Check that it's in your config search path."),
       ("WARNING: Could not find 'nvidia-smi', skipping GPU info", "Could not find the cache, downloading")),
    # ONNX Runtime's Python exceptions (their class names end in neither Error nor Exception: `InvalidArgument`,
    # `Fail`, `NoSuchFile`, `RuntimeException`, `EPFail`), their text as the runtime's Status prints it:
    # `onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument: [ONNXRuntimeError] : 2 : INVALID_ARGUMENT : ...`
    _s("ort-error", r"\[ONNXRuntimeError\] : ",
       r"(?:^|[\s`'\"(])(?:[A-Za-z_]\w*\.)*[A-Z]\w*: \[ONNXRuntimeError\] : \d+ : [A-Z_]+ : ",
       ("onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument: [ONNXRuntimeError] : 2 : INVALID_ARGUMENT : "
        "Got invalid dimensions for input: input for the following indices",
        "Fail: [ONNXRuntimeError] : 1 : FAIL : Load model from model.onnx failed:Protobuf parsing failed."),
       ("INFO retry after [ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : was logged",
        "see the docs for [ONNXRuntimeError] : codes")),
    # TensorRT's logger at error level: `[TRT] [E] 10: [optimizer.cpp::computeCosts::2011] Error Code 10: Internal
    # Error (...)` (8.x+, the Python logger; trtexec prints `[E] [TRT]`), and 7.x's `[TensorRT] ERROR:
    # ../builder/tacticOptimizer.cpp (1715) - TRTInternal Error in computeCosts: 0 (...)`
    _s("tensorrt-error", r"\[TRT\] \[[EF]\] |\[[EF]\] \[TRT\] |\[TensorRT\] (?:INTERNAL )?ERROR: ",
       r"(?:\[TRT\] \[[EF]\]|\[[EF]\] \[TRT\]) \d+: \[[^\]]+\] Error Code \d+: "
       r"|\[TensorRT\] (?:INTERNAL )?ERROR: .*\.(?:cpp|cu|h) \(\d+\) - .*Error in \w+: ",
       ("[02/19/2022-21:14:43] [TRT] [E] 10: [optimizer.cpp::computeCosts::2011] Error Code 10: Internal Error "
        "(Could not find any implementation for node {ForeignNode[x...y]}.)",
        "[TensorRT] ERROR: ../rtSafe/cuda/caskConvolutionRunner.cpp (408) - Cuda Error in execute: 1 "
        "(invalid argument)",
        "[12/01/2023-10:00:00] [E] [TRT] 4: [network.cpp::validate::3062] Error Code 4: Internal Error (x)"),
       ("[TRT] [W] TensorRT was linked against cuDNN 8.6.0 but loaded cuDNN 8.5.0",
        "[TensorRT] ERROR: Try increasing the workspace size with IBuilderConfig::setMaxWorkspaceSize()")),
    # Open MPI's handler for MPI_ERRORS_ARE_FATAL (ompi/errhandler/errhandler_predefined.c): `*** An error occurred
    # in MPI_Init_thread`, then `*** on a NULL communicator` and `*** MPI_ERRORS_ARE_FATAL ...`
    _s("mpi-errors-fatal", r"\*\*\* An error occurred in ", r"^\*\*\* An error occurred in MPI_\w+",
       ("*** An error occurred in MPI_Init_thread", "*** An error occurred in MPI_Allreduce"),
       ("INFO *** An error occurred in MPI_Init_thread was fixed in 4.1", "*** An error occurred in the docs")),
    # Open MPI's launcher (ORTE; PRRTE since 5.0) when its daemons cannot start or are lost, and its own internal
    # errors, from its help texts (help-plm-base.txt, help-errmgr-base.txt, help-orte-runtime.txt)
    _s("orte-fatal", r"(?:ORTE|PRTE) was unable to reliably start |(?:ORTE|PRTE) has lost communication with "
                     r"|An (?:ORTE|PRTE) daemon has unexpectedly failed|An internal error has occurred in (?:ORTE|PRTE)",
       r"^(?:(?:ORTE|PRTE) was unable to reliably start |(?:ORTE|PRTE) has lost communication with "
       r"|An (?:ORTE|PRTE) daemon has unexpectedly failed|An internal error has occurred in (?:ORTE|PRTE))",
       ("ORTE was unable to reliably start one or more daemons.", "ORTE has lost communication with a remote daemon.",
        "An ORTE daemon has unexpectedly failed after launch and before", "An internal error has occurred in ORTE:",
        "PRTE has lost communication with a remote daemon."),
       ("INFO: ORTE was unable to reliably start one daemon last week; fixed",)),
    # glog's (and absl's, XLA's, TensorFlow's) FATAL level: the process aborts after the line:
    # `F0315 12:00:00.123456  4242 tensor.cc:42] message`, `2021-05-01 10:00:00.000000: F
    # tensorflow/core/kernels/x.cc:42] message`
    _s("glog-fatal", r"\.cc:[0-9]+\] |\.cpp:[0-9]+\] ",
       r"^(?:F\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ |\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: F )[\w./-]+\.(?:cc|cpp):\d+\] \S",
       ("F0612 08:53:36.491003 140171 pjrt_stream_executor_client.cc:2104] Non-OK-status: status",
        "2021-05-01 10:00:00.000000: F tensorflow/core/kernels/conv_ops.cc:1120] Check failed: x"),
       ("I0612 08:53:36.491003 140171 gpu_helpers.cc:21] Using BFC allocator.",
        "W0612 08:53:36.491003 140171 cuda_executor.cc:1040] could not open file",
        "2021-05-01 10:00:00.000000: I tensorflow/core/platform/cpu_feature_guard.cc:142] This TensorFlow binary")),
    # torch's ProcessGroupNCCL watchdog dying of the error it caught, logged before it rethrows (std::terminate, then
    # abort): `[E ProcessGroupNCCL.cpp:916] [Rank 7] NCCL watchdog thread terminated with exception: CUDA error:
    # unknown error`, newer releases `[PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated
    # with exception: ...`; what it caught names the family where the ledger knows it (a collective timeout, an
    # illegal memory access)
    _s("nccl-watchdog-died", r"watchdog thread terminated with exception: ",
       r"(?:NCCL|Process group) watchdog thread terminated with exception: ",
       ("[E ProcessGroupNCCL.cpp:916] [Rank 7] NCCL watchdog thread terminated with exception: CUDA error: unknown error",
        "[rank3]:[E1010 10:00:00.123456 ProcessGroupNCCL.cpp:1896] [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group "
        "watchdog thread terminated with exception: CUDA error: unspecified launch failure"),
       ("INFO: the NCCL watchdog thread terminated normally", "docs: when the watchdog thread terminated with exception")),
    # torch's load_state_dict error, its message lines without the `RuntimeError: Error(s) in loading state_dict for
    # X:` line above them (a paste that kept the list): torch joins them with a newline and a tab
    # (`\tsize mismatch for fc.weight: copying a param with shape torch.Size([10, 512]) from checkpoint, the shape in
    # current model is torch.Size([2, 512]).`); mmcv's and mmengine's loaders log the same words unindented as a
    # warning (strict=False, the run goes on), so only an indented line starts a failure (starts_fault)
    _s("torch-state-dict-mismatch", r"size mismatch for ",
       r"^size mismatch for [\w.]+: copying a param with shape torch\.Size\(",
       ("\tsize mismatch for fc.weight: copying a param with shape torch.Size([10, 512]) from checkpoint, the shape in "
        "current model is torch.Size([2, 512]).",),
       ("INFO: no size mismatch for fc.weight: copying a param with shape torch.Size([2]) was found",)),
    # glibc's assert(): `prog: src/x.c:42: int main(): Assertion `n > 0' failed.` (then SIGABRT)
    _s("c-assert", r"' failed\.", r"^[^\s:]+: [^\s:]+:\d+: [^:]*: Assertion `.*' failed\.",
       ("python3: src/nccl_ops.cpp:120: void launch(int): Assertion `n > 0' failed.",
        "main: ggml.c:4512: ggml_new_tensor_impl: Assertion `false' failed."),
       ("INFO: the check `n > 0' failed. retrying", "Device-side assertion `t >= 0 && t < n_classes' failed.")),
    # glibc's heap and stack checks before abort() (malloc_printerr, __fortify_fail), with the old `*** Error in
    # `prog': ... ***` frame: `free(): invalid pointer`, `double free or corruption (!prev)`,
    # `*** stack smashing detected ***: terminated`
    _s("glibc-abort", r"free\(\): invalid |double free or corruption|malloc\(\): |corrupted size vs\. prev_size"
                      r"|corrupted double-linked list|munmap_chunk\(\): invalid pointer|stack smashing detected",
       r"^(?:\*\*\* Error in `[^`]*': )?(?:free\(\): invalid (?:pointer|size|next size)|double free or corruption \("
       r"|malloc\(\): (?:corrupted|memory corruption|unaligned|invalid)|corrupted size vs\. prev_size"
       r"|corrupted double-linked list|munmap_chunk\(\): invalid pointer|\*\*\* stack smashing detected \*\*\*)",
       ("free(): invalid pointer", "*** Error in `python': double free or corruption (!prev): 0x00005581c0a7e010 ***",
        "malloc(): unaligned tcache chunk detected", "*** stack smashing detected ***: terminated"),
       ("INFO: checked for double free or corruption: none", "the docs on free(): invalid pointer")),
    # pip's last word when an install cannot be done (the wheel build of one package may fail and be retried with
    # setup.py: `Failed building wheel` is not the end; these are)
    _s("pip-error", r"ERROR: Could not build wheels for |ERROR: No matching distribution found for |ERROR: ResolutionImpossible"
                    r"|ERROR: Cannot install |ERROR: Could not install packages due to |error: legacy-install-failure",
       r"^(?:ERROR: (?:Could not build wheels for |No matching distribution found for |ResolutionImpossible"
       r"|Cannot install |Could not install packages due to )|error: legacy-install-failure)",
       ("ERROR: Could not build wheels for flash-attn, which is required to install pyproject.toml-based projects",
        "ERROR: No matching distribution found for vllm==0.99.0",
        "ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device"),
       ("ERROR: pip's dependency resolver does not currently take into account all the packages that are installed.",
        "  ERROR: Failed building wheel for flash-attn")),
    # pytest's report of a failed test: the exception line of its traceback under the `E` marker
    # (`E       RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)`)
    _s("pytest-error", r"^E   ", r"^E {3,}(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)(?::|$)",
       ("E       RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
        "E   torch.OutOfMemoryError: CUDA out of memory.", "E       AssertionError: assert 3 == 4"),
       ("E       assert 3 == 4", "E        +  where 3 = len([1, 2, 3])", "E  RuntimeError: too little indent",
        "Epoch 3 RuntimeError: none")),
    # an ERROR / CRITICAL log line that names the exception it caught (`ERROR:root:Training failed:
    # RuntimeError: ...`, `[ERROR] ValueError: ...`), not one announcing a retry or a fallback
    _s("error-log-exception", r"(?:ERROR|CRITICAL|FATAL)[]:| -].*(?:[a-z](?:Error|Exception)(?:: |\(['\"0-9)])| Exception: )"
                              r"|[EF][0-9]{4} [0-9:.]+ +[0-9]+ [^ ]+:[0-9]+\] .*[a-z](?:Error|Exception)(?:: |\()",
       r"(?:(?:^|[\s\[|])(?:ERROR|CRITICAL|FATAL)\]?(?::[\w.]*:|[:\]|]| -)? ?|^[EF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [\w./-]+:\d+\] )"
       r".*?(?<![\w.])(?:(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)(?:: |\((?=['\"\d)]))|Exception: )",
       ("ERROR:root:Training failed: ValueError: Expected input batch_size (8) to match target batch_size (16).",
        "[2024-01-01 10:00:00] [ERROR] RuntimeError: shape '[2, 3]' is invalid for input of size 7",
        "2024-05-01 12:00:00,000 - trainer - ERROR - Job crashed: KeyError: 'labels'",
        # a logged exception's repr (`{e!r}`), a bare Exception, absl's error level (`E0101 ... file.py:88] ...`)
        "2024-01-01 10:00:00.123 | ERROR    | app.worker:run:88 - Failed to process batch: KeyError('labels')",
        "[2024-01-01 10:00:00,000][root][ERROR] - Exception: the reward model returned no scores",
        "E0101 10:00:00.000000 1234 trainer.py:88] Step failed: ValueError: bad shape"),
       ("ERROR:root:Download failed: ConnectionError: reset by peer, retrying in 5s",
        "WARNING: ValueError: ignored", "2024-01-01 INFO ERRORS: 0, TimeoutError: none",
        "ERROR:root:ConnectionError: timed out; falling back to the local copy",
        "ERROR:root:Upload failed: ConnectionError('reset'), retrying in 5s",
        "E0101 10:00:00.000000 1234 cuda_dnn.cc:8310] Unable to register cuDNN factory",
        "INFO: handled KeyError('x') in the collate function")),
    # an ERROR-level line that says a server, an engine or a model failed to start or to load, the last word of a
    # serving stack before it exits (KServe's `Failed to start model server: ...`)
    _s("error-log-failed-start", r"(?:ERROR|CRITICAL|FATAL)[]:| -].*[Ff]ailed to (?:start|launch|load|initiali[sz]e) ",
       r"(?:^|[\s\[|])(?:ERROR|CRITICAL|FATAL)\]?(?::[\w.]*:|[:\]|]| -)? ?.*?\b[Ff]ailed to (?:start|launch|load|initiali[sz]e) "
       r"(?:the |a |an )?(?:model|server|engine|worker|service|backend|pipeline|predictor)",
       ("2024-07-01 07:28:04.488 1 kserve ERROR [__main__.py:<module>():254] Failed to start model server: integer "
        "division or modulo by zero",
        "ERROR 03-01 10:00:00 [server.py:12] Failed to load model: no such file"),
       ("WARNING Failed to start model server on port 8080, trying 8081",
        "ERROR Failed to start metrics exporter, retrying in 5s",
        "ERROR:root:Failed to load model card, ignoring")),
    # a command-line tool's last word before exit 1, as click (ClickException.show), cobra (Go) and anyhow (Rust)
    # print it on a line of its own: `Error: [bentoml-cli] `serve` failed: Invalid Tag`, `Error: model requires more
    # system memory (9.5 GiB) than is available`; not under a log header, not a value (`Error: 0.02`)
    _s("cli-error", r"^Error: ", r"^Error: (?!(?:none|null|nil|n/a|false|true)\b)(?=[^\d\s.%+-])(?=.*[A-Za-z]{3}.*[A-Za-z]{3})",
       ("Error: [bentoml-cli] `serve` failed: Invalid Tag _service:svc",
        "Error: the server exited before becoming ready",
        "Error: llama runner process has terminated: signal: aborted (core dumped)"),
       ("Error: 0.0213", "Error: none", "Error: 12.5% (target 10%)", "error: lowercase",
        "Error: n/a")),
    # llama.cpp's and ggml's own words when a model cannot be loaded or an assertion fails
    # (`llama_model_load: error loading model: ...`, `srv    load_model: failed to load model`,
    # `ggml/src/ggml.c:1560: GGML_ASSERT(x) failed`)
    _s("llamacpp-error", r": error loading model: |: failed to load model|GGML_ASSERT\(|: exiting due to model loading error",
       r"^(?:[a-z]\w* +)?(?!warn|info|debug|note)[a-z]\w*: (?:error loading model: |failed to load model"
       r"|exiting due to model loading error)|GGML_ASSERT\(.*\) failed",
       ("llama_model_load: error loading model: llama_model_loader: failed to load model",
        "main: exiting due to model loading error",
        "srv    load_model: failed to load model",
        "/app/ggml/src/ggml-cuda/ggml-cuda.cu:1500: GGML_ASSERT(ggml_nbytes(src0) <= INT_MAX) failed"),
       ("INFO: retry after: failed to load model earlier", "see GGML_ASSERT( docs",
        "WARNING: failed to load model card, using defaults", "warning: failed to load model hash cache")),
    # llama.cpp's server failing a request (tools/server: `SRV_ERR("task id = %d, error: %s\n", ...)` in send_error,
    # and llama-box's `send_error: task 1 | error = ...`): the task's error, whatever the server does next (a 4xx
    # answer after it makes it a refused request, scan/verdict.py)
    _s("llamacpp-send-error", r"send_error: task ",
       r"(?:^|\s)send_error: task (?:id = )?\d+(?:,| \|) error(?::| =) \S",
       ("srv    send_error: task id = 307, error: Invalid input batch.",
        "3.49.305.569 E srv                send_error: task 1 | error = decoding exceeds the available context size."),
       ("send_error: task id = 3, error: ", "// send_error: task id = %d, error: %s")),
    # Triton's model table at start-up: a model that could not be loaded, and TensorRT-LLM's assertion
    # (`| tensorrt_llm | 1 | UNAVAILABLE: Internal: ...`, `[TensorRT-LLM][ERROR] Assertion failed: mpiSize == tp * pp`)
    _s("triton-unavailable", r"\| UNAVAILABLE: |\[TensorRT-LLM\]\[ERROR\] Assertion failed: ",
       r"^\| *[^|]+ \| *\d+ +\| UNAVAILABLE: |\[TensorRT-LLM\]\[ERROR\] Assertion failed: ",
       ("| tensorrt_llm   | 1       | UNAVAILABLE: Internal: unexpected error when creating modelInstanceState",
        "[TensorRT-LLM][ERROR] Assertion failed: mpiSize == tp * pp (/app/cpp/runtime/worldConfig.cpp:80)"),
       ("| preprocessing  | 1       | READY |", "the UNAVAILABLE: state means the model did not load")),
)

REPORTS: tuple[Shape, ...] = (
    _s("hydra-hint", r"HYDRA_FULL_ERROR=1 for a complete stack trace",
       r"Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace",
       ("Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.",),
       ("export HYDRA_FULL_ERROR=1",)),
    _s("hydra-job", r"Error executing job with overrides: ", r"^Error executing job with overrides: ",
       ("Error executing job with overrides: ['task=mt80', 'model_size=48']",),
       ("INFO retry: Error executing job with overrides: [] (attempt 1)",)),
    # GNU make's word that a recipe failed: `make: *** [Makefile:12: train] Error 1`, `make[1]: *** [all] Error 2`
    _s("make", r": \*\*\* \[", r"^make(?:\[\d+\])?: \*\*\* \[[^\]]*\] Error (?P<code>\d+)",
       ("make: *** [Makefile:12: train] Error 1", "make[2]: *** [src/CMakeFiles/x.dir/all] Error 2"),
       ("make: *** [train] Error 0", "make: Nothing to be done for 'all'.")),
    # conda's `conda run` when the command failed: `ERROR conda.cli.main_run:execute(125): `conda run python
    # train.py` failed. (See above for error)`
    _s("conda-run", r"conda\.cli\.main_run:execute\(", r"ERROR conda\.cli\.main_run:execute\(\d+\): .* failed\.",
       ("ERROR conda.cli.main_run:execute(124): `conda run python train.py` failed. (See above for error)",),
       ("INFO conda.cli.main_run:execute(33): `conda run python train.py` started",)),
    # a supervisor's (docker compose, a job runner) word that a process exited non-zero
    _s("exited-with-code", r"exited with code |exited with error code |exited with return code ",
       r"exited with (?:error |return )?code:? (?P<code>\d+)(?:[^\d]|$)",
       ("trainer-1 exited with code 1", "Process exited with code 2.", "Training exited with error code 126"),
       ("trainer-1 exited with code 0", "the child exited with code 0 after 3 epochs",
        "trainer-1 exited with code 1357")),
    # Go's os/exec and many wrappers: `exit status 1` at the end of the line
    _s("exit-status", r"exit status ", r"(?:^|: )exit status (?P<code>\d+) *$",
       ("exit status 1", "Error: exit status 2"),
       ("subprocess.CalledProcessError: Command '['ls']' returned non-zero exit status 1.", "exit status 0",
        "INFO exit status 1 of 4 probes ok")),
    # PyCharm's run console
    _s("ide-exit", r"Process finished with exit code ", r"^Process finished with exit code (?P<code>\d+)",
       ("Process finished with exit code 1",),
       ("Process finished with exit code 0",)),
    # a served model's answer to a request, as uvicorn's access log prints it: a request that changes state
    # (POST, PUT, PATCH, DELETE) answered 4xx or 5xx, any request answered 5xx but 503 (a health probe before the
    # server is ready) and those of a probe of its health, readiness or metrics (a probe's answer says the
    # server is not ready, not that a request failed); 429 and 499 are load, not a failure of the request's own
    _s("http-error", r"HTTP/[0-9.]+\" [45][0-9][0-9]",
       r"\"(?:(?:POST|PUT|PATCH|DELETE) [^\"]* HTTP/[\d.]+\" (?!429|499)4\d\d|[A-Z]+ (?!/(?:health|healthz|ready|readyz|live|livez"
       r"|ping|metrics)[ ?/])[^\"]* HTTP/[\d.]+\" (?!503)5\d\d)(?!\d)",
       ('INFO:     10.0.135.38:48284 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request',
        'INFO:     127.0.0.1:5 - "GET /v1/models HTTP/1.1" 500 Internal Server Error'),
       ('INFO:     192.168.24.70:0 - "GET / HTTP/1.1" 404 Not Found',
        'INFO:     10.0.0.1:5 - "GET /health HTTP/1.1" 503 Service Unavailable',
        'INFO:     10.0.0.1:5 - "GET /health HTTP/1.1" 500 Internal Server Error',
        'INFO:     10.0.0.1:5 - "GET /metrics HTTP/1.1" 500 Internal Server Error',
        'INFO:     10.0.0.1:5 - "POST /v1/completions HTTP/1.1" 429 Too Many Requests',
        'INFO:     10.0.0.1:5 - "POST /v1/completions HTTP/1.1" 200 OK')),
    # llama.cpp's server's access log (tools/server: `SRV_INF("request: %s %s %s %d\n", method, path, remote_addr,
    # status)`): `srv  log_server_r: request: POST /completion 127.0.0.1 500`
    _s("llamacpp-http-error", r": request: [A-Z]+ /",
       r"(?:^|\s)\w+: request: (?:(?:POST|PUT|PATCH|DELETE) \S+ \S+ (?!429|499)4\d\d|[A-Z]+ (?!/(?:health|metrics|v1/health)\b)\S+ \S+ (?!503)5\d\d) *$",
       ("srv  log_server_r: request: POST /completion 127.0.0.1 500",
        "srv  log_server_r: request: POST /v1/chat/completions 127.0.0.1 400"),
       ("srv  log_server_r: request: POST /completion 127.0.0.1 200",
        "srv  log_server_r: request: GET /health 127.0.0.1 503",
        "srv  log_server_r: request: POST /completion 127.0.0.1 429")),
    # Ollama's (gin's) access log: `[GIN] 2024/05/01 - 12:00:00 | 500 |  5.0s |  127.0.0.1 | POST "/api/chat"`
    _s("gin-http-error", r"\[GIN\] ", r"^\[GIN\] .* \| (?!429)(?:4\d\d|5\d\d) \| .* \| (?:POST|PUT|PATCH|DELETE) ",
       ('[GIN] 2024/05/01 - 12:00:00 | 500 |  5.012s |       127.0.0.1 | POST     "/api/chat"',),
       ('[GIN] 2024/05/01 - 12:00:00 | 200 |  5.012s |       127.0.0.1 | POST     "/api/chat"',
        '[GIN] 2024/05/01 - 12:00:00 | 404 |     12µs |       127.0.0.1 | GET      "/favicon.ico"')),
    # Open MPI's help text when a rank exited non-zero (help-mpirun.txt): `Primary job  terminated normally, but 1
    # process returned` / `a non-zero exit code. Per user-direction, the job has been aborted.`
    _s("mpirun-nonzero", r"terminated normally, but ", r"^Primary job +terminated normally, but \d+ process(?:es)? returned",
       ("Primary job  terminated normally, but 1 process returned",),
       ("Primary job  terminated normally.", "All 4 processes terminated normally, but slowly")),
    # Open MPI's help text when a rank called MPI_Abort (it printed its own error above, if any)
    _s("mpi-abort", r"MPI_ABORT was invoked on rank ", r"MPI_ABORT was invoked on rank (?P<w>\d+) in communicator",
       ("MPI_ABORT was invoked on rank 3 in communicator MPI_COMM_WORLD",),
       ("see the MPI_ABORT docs",)),
    # Ray's job CLI when the submitted job failed (`ray job submit`, `ray job logs --follow`)
    _s("ray-job-failed", r"' failed", r"^Job '[\w.-]+' failed *$",
       ("Job 'raysubmit_7BbNeTFsL2b3CXWk' failed",),
       ("Job 'raysubmit_7BbNeTFsL2b3CXWk' succeeded", "Job 'x' failed to stop, retrying")),
    # torchelastic's rendezvous when this node cannot reach the store: a warning each keep-alive interval; after
    # keep_alive_max_attempt (3) missed beats the other nodes count this one dead, so three say the job failed
    _s("rdzv-heartbeat", r"has failed to send a keep-alive heartbeat to the rendezvous ",
       r"The node '[^']*' has failed to send a keep-alive heartbeat to the rendezvous '[^']*' due to an error of type",
       ("WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node 'n1_1_0' has failed to send a "
        "keep-alive heartbeat to the rendezvous 'none' due to an error of type RendezvousConnectionError.",),
       ("INFO: The node 'n1_1_0' has sent a keep-alive heartbeat to the rendezvous 'none'.",), least=3),
    # the error body an OpenAI-compatible server answers a request with, as the client prints it (vLLM's
    # ErrorResponse: `{"object":"error","message":"...","type":"BadRequestError","param":null,"code":400}`, and the
    # OpenAI form `{"error": {"message": "...", "type": ...}}`)
    _s("served-error-body", r"\{\"object\": ?\"error\", ?\"message\": ?\"|\{\"error\": ?\{\"message\": ?\"",
       r"\{\"object\": ?\"error\", ?\"message\": ?\"|\{\"error\": ?\{\"message\": ?\"",
       ('{"object":"error","message":"This model\'s maximum context length is 4096 tokens.","type":"BadRequestError",'
        '"param":null,"code":400}',
        '{"error": {"message": "The model `x` does not exist.", "type": "NotFoundError", "param": null, "code": 404}}'),
       ('{"object":"list","data":[{"id":"x","object":"model"}]}', '{"error": null, "message": "ok"}')),
    # a CI runner's word that the job's command failed: GitHub Actions (`##[error]Process completed with exit code
    # 1.`), GitLab (`ERROR: Job failed: exit code 1`)
    _s("ci-exit", r"Process completed with exit code |ERROR: Job failed: exit code ",
       r"(?:(?:^##\[error\]|^Error: |^)Process completed with|^ERROR: Job failed:) exit code (?P<code>\d+)",
       ("##[error]Process completed with exit code 1.", "ERROR: Job failed: exit code 2"),
       ("##[error]Process completed with exit code 0.", "INFO: the step Process completed with exit code 1 is retried")),
    # vLLM's OpenAI server logging the error it answers a request with (serving_chat.py, serving_completion.py)
    _s("served-error", r"Error with model ", r"Error with model (?:object='error'|ErrorResponse\(|error=)",
       ("ERROR 03-18 09:02:03 [serving_chat.py:133] Error with model object='error' message='The model `x` does "
        "not exist.' type='NotFoundError' param=None code=404",),
       ("INFO Error with model loading is unlikely",)),
)

# what a line must contain for each shape to take it (one of), so that a line pays for the patterns of the
# shapes it may be only (a log full of error lines runs this for each of them)
_NEEDLES = {
    "rust-panic": ("' panicked at ",),
    "go-panic": ("panic: ", "fatal error: ", "SIGABRT: ", "SIGILL: ", "SIGFPE: ", "SIGTRAP: "),
    "check-failed": ("Check failed: ",),
    "cpp-terminate": ("terminate called ",),
    "check-macro": (" error ",),
    "thc-check": ("THCudaCheck FAIL file=",),
    "ray-unhandled-cpp": ("Unhandled ",),
    "ray-creation-task": (RAY_CREATION_TASK,),
    "shell-abort": ("Aborted", "Floating point exception", "Illegal instruction", "Trace/breakpoint trap"),
    "ray-task-error": ("RayTaskError(", "RayActorError("),
    "dask-compute-failed": ("Compute Failed",),
    "caught-signal": ("Caught signal ",),
    "failure-signal": ("*** ",),
    "apple-failed-assertion": ("failed assertion `",),
    "cpp-what": ("what(): ",),
    "jvm-uncaught": ('Exception in thread "',),
    "python-no-script": ("can't open file '",),
    "click-usage": ("Error: ",),
    "c10d-timeout": ("The client socket has timed out after ",),
    "hydra-config": ("Could not ", "Cannot find primary config '"),
    "error-log-exception": ("Error: ", "Exception: ", "Error(", "Exception("),
    "error-log-failed-start": ("ailed to ",),
    "glibc-abort": ("free(): invalid ", "double free or corruption", "malloc(): ", "corrupted size vs. prev_size",
                    "corrupted double-linked list", "munmap_chunk(): invalid pointer", "stack smashing detected"),
    "pip-error": ("ERROR: ", "error: legacy-install-failure"),
    "served-error-body": ('"error"',),
    "ci-exit": ("Process completed with exit code ", "ERROR: Job failed: exit code "),
    "cli-error": ("Error: ",),
    "llamacpp-error": (": error loading model: ", ": failed to load model", "GGML_ASSERT(", ": exiting due to model loading error"),
    "llamacpp-send-error": ("send_error: task ",),
    "triton-unavailable": ("| UNAVAILABLE: ", "[TensorRT-LLM][ERROR] Assertion failed: "),
    "ort-error": ("[ONNXRuntimeError] : ",),
    "pytest-error": ("E   ",),
    "tensorrt-error": ("[TRT] [", "] [TRT] ", "[TensorRT] "),
    "mpi-errors-fatal": ("*** An error occurred in ",),
    "orte-fatal": ("RTE",),
    "glog-fatal": ("cc:", "cpp:"),
    "nccl-watchdog-died": ("watchdog thread terminated with exception: ",),
    "torch-state-dict-mismatch": ("size mismatch for ",),
    "c-assert": ("' failed.",),
    "hydra-hint": ("HYDRA_FULL_ERROR=1",),
    "hydra-job": ("Error executing job with overrides: ",),
    "make": (": *** [",),
    "conda-run": ("conda.cli.main_run:execute(",),
    "exited-with-code": ("exited with ",),
    "exit-status": ("exit status ",),
    "ide-exit": ("Process finished with exit code ",),
    "mpirun-nonzero": ("terminated normally, but ",),
    "http-error": ("HTTP/",),
    "llamacpp-http-error": (": request: ",),
    "gin-http-error": ("[GIN] ",),
    "mpi-abort": ("MPI_ABORT was invoked on rank ",),
    "ray-job-failed": ("' failed",),
    "rdzv-heartbeat": ("has failed to send a keep-alive heartbeat",),
    "served-error": ("Error with model ",),
}
FAULTS = tuple(replace(s, needles=_NEEDLES[s.name]) for s in FAULTS)
REPORTS = tuple(replace(s, needles=_NEEDLES[s.name]) for s in REPORTS)

FAULT_TRIGGER = "|".join(s.trigger for s in FAULTS)
_LEAST = {s.name: s.least for s in REPORTS}
REPORT_TRIGGER = "|".join(s.trigger for s in REPORTS)


def _confirm(shapes: tuple[Shape, ...], ln: Line) -> tuple[Shape, re.Match[str]] | None:
    """The first shape whose confirm pattern matches the line without its prefix, or without its header (a
    timestamp, a log level) too."""
    content = ln.content
    body = None
    for s in shapes:
        for n in s.needles:  # a plain loop: this runs for every line a trigger hit
            if n in content:
                break
        else:
            continue
        if body is None:
            content, body = content.strip(), ln.body.strip()
        m = s.confirm.search(content) or s.confirm.search(body)
        if m is not None:
            return s, m
    return None


# shapes whose lines are an exception's message (torch's list under `Error(s) in loading state_dict`): evidence only
# when the block has no exception line of its own
_MESSAGE_ONLY = frozenset({"torch-state-dict-mismatch"})


def fault_line(text: str, *, messages: bool = True) -> bool:
    """Whether a line of a block is a fault shape's (a panic, a fatal check, a relayed task error, ...);
    `messages=False` leaves out the shapes of an exception's message lines."""
    t = text.strip()
    return any(s.confirm.search(t) for s in FAULTS
               if (messages or s.name not in _MESSAGE_ONLY) and any(n in t for n in s.needles))


def fault_lines(texts: list[str], ev: list[str]) -> list[str]:
    """A fault block's evidence: the lines a fault shape confirms (without the prefix), then its exception lines."""
    own = [t.strip()[:500] for t in texts if fault_line(t, messages=not ev)][:2]
    return own + [e for e in ev if e not in own][: 4 - len(own)]


# fault shapes whose program exits right after its one line (the CUDACHECK / NCCLCHECK macros: printf, then exit):
# the line below it is another process's, or the launcher's word of the exit (`Worker proc VllmWorker-0 died`)
_ONE_LINE = frozenset({"check-macro"})


def one_line_fault(ln: Line) -> bool:
    """Whether a line that opens a failure block is the whole failure: nothing below it is part of it."""
    hit = _confirm(FAULTS, ln)
    return hit is not None and hit[0].name in _ONE_LINE


def starts_fault(ln: Line) -> bool:
    """Whether a line the fault trigger hit is a failure's first line."""
    hit = _confirm(FAULTS, ln)
    if hit is None:
        return False
    name = hit[0].name
    if name == "cli-error":
        return not ln.header  # the tool's own line, not a log record's message
    if name == "torch-state-dict-mismatch":
        return ln.body[:1].isspace()  # torch's raised list (indented), not a loader's warning (flush left)
    return not (name in ("error-log-exception", "error-log-failed-start") and _announces_retry(ln.content))


@dataclass(frozen=True, slots=True)
class Report:
    line: int
    text: str
    worker: str | None
    code: int | None
    time: str | None
    shape: str = "exit"  # the report shape's name; "exit": a launcher's exit line (text/workers.py)


def report_of(ln: Line, lineno: int, time: str | None) -> Report | None:
    """The report a line the report trigger hit makes, or None (an exit code of 0, or one a family names)."""
    hit = _confirm(REPORTS, ln)
    if hit is None:
        return None
    code = int(hit[1]["code"]) if "code" in hit[1].re.groupindex and hit[1]["code"] else None
    if not _failed(code):
        return None
    text = ln.content.strip()
    named = hit[1]["w"] if "w" in hit[1].re.groupindex else None
    return Report(lineno, text[:300], ln.worker or named or worker_in_text([ln.body]), code, time, hit[0].name)


_CLIENT_ERROR = lazy(r"HTTP/[\d.]+\" 4\d\d(?!\d)|: request: [A-Z]+ \S+ \S+ 4\d\d *$")

_SEND_ERROR = next(s for s in FAULTS if s.name == "llamacpp-send-error")
ACCESS_LOGS = frozenset({"http-error", "llamacpp-http-error"})  # report shapes that are a server's access log


def request_error(text: str) -> bool:
    """Whether a line is a server's record of one request's error (llama.cpp's send_error)."""
    return "send_error: task " in text and _SEND_ERROR.confirm.search(text.strip()) is not None


def client_error(text: str) -> bool:
    """Whether an access log's line (an http-error report) answered its request with a client error (4xx)."""
    return _CLIENT_ERROR.search(text) is not None


def _failed(code: int | None) -> bool:
    """A non-zero exit that no family's exit code names (-9 a kill, -11 a segfault, -7 a bus error, -15 and -2
    a stop from outside, -1 a launcher's own stop)."""
    if code is None:
        return True
    if code > 255:
        return False  # no exit status a process can have (POSIX keeps 8 bits): a number that only looks like one
    if 128 < code < 160:
        code = -(code - 128)
    return code not in (0, -1, -2, -15) and family_of_exit(code) is None


# a launcher stopping the siblings of the worker that failed: printed before the line that names that worker
# (and MPICH's Hydra: its exit string below `YOU CAN IGNORE THE BELOW CLEANUP MESSAGES` is the cleanup's SIGTERM)
TEARDOWN = lazy(r"Sending process \d+ closing signal SIGTERM|Closing process \d+ via signal SIGTERM|Killing subprocess \d+"
                       r"|TERMINATED WITH THE EXIT STRING: Terminated \(signal 15\)")

def _says_why(line: str) -> bool:
    """A line of a failure block that is neither a traceback's header nor one of its frames."""
    return bool(line.strip()) and not line[:1].isspace() and not line.startswith("Traceback (most recent call last)")


REPORT_TITLE = "Failure no signature explains (reported by its launcher, nothing of its own printed)"


# Slurm ending a step after one of its tasks failed: srun's `_step_signal: Terminating StepId=...` and slurmstepd's
# `*** STEP 4357.0 ON node CANCELLED AT 2021-07-14T08:00:36 ***` with no reason (a time limit or a preemption names
# one: `DUE TO TIME LIMIT`); printed after the failed task's exit, it is the teardown of its siblings
STEP_STOP = lazy(r"\*\*\* STEP \S+ ON \S+ CANCELLED AT \S+ \*\*\* *$|(?:_step_signal: |srun: )Terminating StepId=")


BARE_KILLED = lazy(r"^(?:\x1b?\[[0-9;]*m|\W)*Killed\W*$")  # the shell's word alone that its job was SIGKILLed


def bare_kill(f: Finding) -> bool:
    """Whether a host-oom-killed finding is the shell's `Killed` alone, no word of memory in it."""
    return f.family == "host-oom-killed" and bool(f.block) and all(BARE_KILLED.match(x) or not x.strip() for x in f.block)


def _explained(findings: list[Finding], first_report: int | None = None) -> bool:
    """Whether the source's findings explain a report: any finding does, but a launcher tearing down siblings
    (or Slurm ending the step, below the first report of a failed task)."""
    for f in findings:
        if f.family == "process-killed-by-signal" and all(TEARDOWN.search(x) for x in (f.evidence or f.block)):
            continue
        if f.family == "process-killed-by-signal" and first_report is not None and f.line > first_report \
                and all(STEP_STOP.search(x) for x in (f.evidence or f.block)):
            continue
        if f.family == UNKNOWN and not any(_says_why(x) for x in f.block):
            continue  # a traceback cut short before its exception line says nothing of why
        if first_report is not None and f.line > first_report and bare_kill(f):
            continue  # the shell's `Killed` after a launcher reported a child's failure: its teardown (verdict.py)
        return True
    return False


def is_report(f: Finding) -> bool:
    return f.family == UNKNOWN and f.title == REPORT_TITLE


def emit_reports(st: ScanState) -> None:
    """At the end of a source: its reports and launcher exits nothing else explains become `unknown` findings,
    one per worker (its first report: what follows it is the same failure told again), in line order among the
    others."""
    rows = [Report(e.line, e.text, e.worker, e.code, e.time) for e in st.exits if _failed(e.code) and e.code is not None]
    seen_shapes = Counter(r.shape for r in st.reports)
    rows += [r for r in st.reports if seen_shapes[r.shape] >= _LEAST.get(r.shape, 1)]
    if not rows or _explained(st.findings, min(r.line for r in rows)):
        return
    if any(r.worker is not None for r in rows):
        # a wrapper's word with no worker (`Primary job terminated normally, but 1 process returned`, `make: ***`)
        # tells the failure a worker's own exit line names: one finding, the worker's
        rows = [r for r in rows if r.worker is not None]
    seen: set[str | None] = set()
    made = False
    for r in sorted(rows, key=lambda r: r.line):
        if r.worker in seen:
            continue
        seen.add(r.worker)
        fp = fingerprint([UNKNOWN, r.text])
        f = Finding(
            family=UNKNOWN, title=REPORT_TITLE, role=Role.ROOT, status=Status.UNKNOWN, confidence=0.0,
            method=Method.NONE, source=st.state.name, line=r.line, end_line=r.line, time=r.time,
            worker=r.worker, evidence=[r.text], fingerprint=fp, family_role=Role.ROOT, block=[r.text],
        )
        st._publish(f)
        made = True
    if made:
        st.findings.sort(key=lambda f: f.line)
