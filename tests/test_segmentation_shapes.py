"""Failure shapes from real logs that open a block although they carry no `Name: message` line.

A small fixed ledger (tests/files/ledger_min), so that these test the scanner's
segmentation, not the shipped pack's wording: each shape must give exactly one
`unknown` finding starting on the right line, from every prefilter engine, and
the look-alike text beside it none.
"""

from __future__ import annotations

import pytest

from sigclass.ledger.pack import load_ledger
from sigclass.scan.prefilter import available_engines
from sigclass.scan.scanner import Scanner

from conftest import FILES

BARE_ASSERT = """\
INFO loading weights
  File "/usr/lib/python3.10/site-packages/pkg/models/gpt.py", line 245, in load_weights
    assert param_slice.shape == loaded_weight.shape
AssertionError
INFO shutting down
"""

EMPTY_MESSAGE = """\
  File "/usr/lib/python3.10/site-packages/torch/distributed/launcher/api.py", line 245, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
"""

ARGPARSE = """\
usage: serve [-h] [--port PORT] model
serve: error: unrecognized arguments: --temperature 0.8
"""

ARGPARSE_REQUIRED = "train.py: error: the following arguments are required: --config\n"

# clap's usage error (TGI's launcher, Rust) and llama.cpp's (`common/arg.cpp`), each printed on a line of its own
CLAP = """\
$ text-generation-launcher --env
error: invalid value 'True' for '--disable-custom-kernels'
  [possible values: true, false]

For more information, try '--help'.
"""

LLAMACPP_ARG = "llama-server -hf ggml-org/Qwen2.5-Coder-7B-Q8_0-GGUF --port 8012\nerror: invalid argument: -hf\n"

# an OpenAI-compatible client's HTTP error (openai's APIStatusError text), caught and printed by the caller
CLIENT_400 = """\
sampling data len 200
Error Occurs: "Error code: 400 - {'object': 'error', 'message': "This model's maximum context length is 16384 tokens. However, you requested 19591 tokens (9591 in the messages, 10000 in the completion). Please reduce the length of the messages or completion. None", 'type': 'BadRequestError', 'param': None, 'code': 400}"
"""

# c10d gives up on the store: its retries are warnings, the last line an error
C10D_GIVES_UP = """\
[W socket.cpp:697] [c10d] The client socket has failed to connect to 0.104.99.143:47389 (errno: 110 - Connection timed out).
[E socket.cpp:753] [c10d] The client socket has failed to connect to any network address of (6841231, 47389).
"""

# an exception line under a bracketed tag no prefix rule knows (a poster's `[rankx]:` placeholder, a tool's own tag)
TAGGED_EXCEPTION = """\
[rankx]: ValueError: Cannot use chat template functions because tokenizer.chat_template is not set
"""

LOOK_ALIKES = """\
INFO retried after ConnectionError
[WARNING]: UserWarning: the tokenizer has no chat template, using the default one
step 10 metric=AssertionError count 0
WARNING tokenizer: error: none, continuing
[W socket.cpp:697] [c10d] The client socket has failed to connect to [::ffff:0.104.99.143]:47389 (errno: 110 - Connection timed out).
INFO HTTP Request: POST http://localhost:8000/v1/chat/completions "HTTP/1.1 200 OK"
"""


@pytest.fixture(scope="module")
def mini():
    return load_ledger([FILES / "ledger_min"], shipped=False, strict=True)


@pytest.mark.parametrize("engine", available_engines())
@pytest.mark.parametrize("text, first_line", [(BARE_ASSERT, 2), (EMPTY_MESSAGE, 1), (ARGPARSE, 2),
                                              (ARGPARSE_REQUIRED, 1), (CLIENT_400, 2), (C10D_GIVES_UP, 2),
                                              (CLAP, 2), (LLAMACPP_ARG, 2), (TAGGED_EXCEPTION, 1)])
def test_shape_opens_one_unknown_block(mini, engine, text, first_line):
    res = Scanner(mini, signatures="regex", engine=engine).scan_text(text)
    assert [f.family for f in res.findings] == ["unknown"]
    assert res.findings[0].line == first_line


@pytest.mark.parametrize("engine", available_engines())
def test_look_alikes_open_nothing(mini, engine):
    assert Scanner(mini, signatures="regex", engine=engine).scan_text(LOOK_ALIKES).findings == []


# --------------------------------------------------------------------------- PaddlePaddle's enforce report

PADDLE_SIGNAL = """\
W0724 07:29:06.041456 31841 analysis_predictor.cc:1183] Deprecated. Please use CreatePredictor instead.


--------------------------------------
C++ Traceback (most recent call last):
--------------------------------------
0   paddle::framework::SignalHandle(char const*, int)
1   paddle::platform::GetCurrentTraceBackString[abi:cxx11]()

----------------------
Error Message Summary:
----------------------
FatalError: `Segmentation fault` is detected by the operating system.
  [TimeInfo: *** Aborted at 1627111748 (unix time) try "date -d @1627111748" if you are using GNU date ***]
  [SignalInfo: *** SIGSEGV (@0x0) received by PID 31841 (TID 0x7f0d81bd6740) from PID 0 ***]
"""

PADDLE_IN_EXCEPTION = """\
Traceback (most recent call last):
  File "tools/train.py", line 199, in main
    loss.backward()
SystemError: 

--------------------------------------
C++ Traceback (most recent call last):
--------------------------------------
0   paddle::imperative::BasicEngine::Execute()
1   paddle::framework::OperatorWithKernel::Run(paddle::framework::Scope const&, phi::Place const&) const

----------------------
Error Message Summary:
----------------------
ResourceExhaustedError: Out of memory error on GPU 0. Cannot allocate 1.205078GB memory on GPU 0.
"""


@pytest.mark.parametrize("text, family, first, last", [(PADDLE_SIGNAL, "segfault", 5, 15),
                                                       (PADDLE_IN_EXCEPTION, "cuda-oom", 1, 15)])
def test_paddle_s_report_is_one_failure_with_the_error_it_summarises(text, family, first, last):
    res = Scanner(load_ledger(), signatures="regex").scan_text(text)
    assert [(f.family, f.line, f.end_line) for f in res.findings] == [(family, first, last)]


# --------------------------------------------------------------------------- load_state_dict's list of parameters

def _state_dict_rows(n: int, prefix: str = "\t") -> list[str]:
    return [f"{prefix}size mismatch for layer{i}.weight: copying a param with shape torch.Size([256]) from checkpoint, "
            f"the shape in current model is torch.Size([128])." for i in range(n)]


def test_a_long_state_dict_mismatch_is_one_failure():
    text = "\n".join(["Traceback (most recent call last):", '  File "train.py", line 10, in <module>',
                      "    model.load_state_dict(ckpt)", "RuntimeError: Error(s) in loading state_dict for ResNet:",
                      *_state_dict_rows(80)]) + "\n"
    res = Scanner(load_ledger(), signatures="regex").scan_text(text)
    assert [(f.family, f.line) for f in res.findings] == [("unknown", 1)]
    assert res.findings[0].end_line >= 84


def test_state_dict_rows_alone_are_no_failure():
    """mmcv and mmengine load checkpoints with strict=False and print the same rows as a warning, under `The model
    and loaded state dict do not match exactly`; rows alone do not say which they are."""
    text = "\n".join(["The model and loaded state dict do not match exactly", "", *_state_dict_rows(5, ""),
                      "2022-05-26 20:17:14,758 - mmdet - INFO - Start running, host: root@1c986b77116d"]) + "\n"
    assert Scanner(load_ledger(), signatures="regex").scan_text(text).findings == []


# --------------------------------------------------------------------------- IPython's (Jupyter's, Colab's) traceback

IPYTHON_COLAB = """\
---------------------------------------------------------------------------
InvalidArgumentError                      Traceback (most recent call last)
<ipython-input-16-f5935cc41c39> in <module>()
      2 model_checkpoint = tf.keras.callbacks.ModelCheckpoint('unet.hdf5', monitor='loss', verbose=0)
----> 3 model.fit(data_gen, steps_per_epoch=20, epochs=100, callbacks=[model_checkpoint, tensorboard_callback])

11 frames
/usr/local/lib/python3.7/dist-packages/tensorflow/python/eager/execute.py in quick_execute(op_name, num_outputs, inputs)
     59     tensors = pywrap_tfe.TFE_Py_Execute(ctx._handle, device_name, op_name,
---> 60                                         inputs, attrs, num_outputs)

InvalidArgumentError: Nan in summary histogram for: conv2d/kernel_0 [Op:WriteHistogramSummary]
"""

IPYTHON_8 = """\
---------------------------------------------------------------------------
OutOfMemoryError                          Traceback (most recent call last)
Cell In[4], line 2
      1 batch = next(iter(loader))
----> 2 out = model(batch)

File ~/venv/lib/python3.10/site-packages/torch/nn/modules/module.py:1501, in Module._call_impl(self, *args, **kwargs)
   1500     return forward_call(*args, **kwargs)

OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB
"""


@pytest.mark.parametrize("text, family, last", [(IPYTHON_COLAB, "nan-loss", 12), (IPYTHON_8, "cuda-oom", 10)])
def test_an_ipython_traceback_is_one_failure_up_to_its_exception(text, family, last):
    res = Scanner(load_ledger(), signatures="regex").scan_text(text)
    assert [(f.family, f.line, f.end_line) for f in res.findings] == [(family, 2, last)]


# --------------------------------------------------------------------------- an actor's constructor raised (Ray)

RAY_CREATION = """\
(WorkerDict pid=136980) Exception raised in creation task: The actor died because of an error raised in its creation task, ray::WorkerDict.__init__() (pid=136980, ip=192.168.100.8)
(WorkerDict pid=136980)   File "/usr/lib/python3.10/concurrent/futures/_base.py", line 451, in result
(WorkerDict pid=136980)     return self.__get_result()
(WorkerDict pid=136980)   File "/verl/single_controller/base/decorator.py", line 40, in __init__
(WorkerDict pid=136980)     raise ValueError(f"ulysses_sequence_parallel_size {sp} must divide world size {ws}")
(WorkerDict pid=136980) ValueError: ulysses_sequence_parallel_size 3 must divide world size 8
"""


def test_a_ray_actor_s_creation_task_error_is_one_failure_with_its_exception():
    res = Scanner(load_ledger(), signatures="regex").scan_text(RAY_CREATION)
    assert [(f.family, f.line, f.end_line) for f in res.findings] == [("unknown", 1, 6)]


def test_a_ray_creation_task_line_cut_from_its_exception_is_still_a_failure():
    res = Scanner(load_ledger(), signatures="regex").scan_text("\n".join(RAY_CREATION.splitlines()[:3]) + "\n")
    assert [(f.family, f.line) for f in res.findings] == [("unknown", 1)]


# --------------------------------------------------------------------------- C++ exceptions beside Python's

# a Python exception, then at teardown a C++ exception the process cannot catch: two failures, the first the cause
PY_THEN_TERMINATE = """\
  File "/opt/det/modeling/rpn/loss.py", line 178, in prepare_targets
    ious[candidate_idxs[is_pos[:, ng] == 1, ng], ng]
RuntimeError: shape mismatch: value tensor of shape [5] cannot be broadcast to indexing result of shape [8]
terminate called after throwing an instance of 'std::runtime_error'
  what():  NCCL error in: /pytorch/torch/lib/c10d/NCCLUtils.hpp:84, unhandled cuda error
"""

TB_THEN_TERMINATE = "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n" + \
    "\n".join(PY_THEN_TERMINATE.splitlines()[2:]) + "\n"

# a pasted C++ abort whose line breaks were doubled (a blank line after every line), as issue threads often show it
CPP_DOUBLE_SPACED = """\
 [TM][INFO] [Forward] [0, 1), dc=0, pf=1, sum_q=679

 terminate called after throwing an instance of 'std::runtime_error'

   what():  [TM][ERROR] CUDA runtime error: an illegal memory access was encountered /src/turbomind/LlamaBatch.h:143

 [TM][INFO] [forward] Enqueue requests
"""


@pytest.mark.parametrize("text, first, second", [(PY_THEN_TERMINATE, 1, 4), (TB_THEN_TERMINATE, 1, 4)])
def test_a_terminate_after_a_python_exception_is_a_failure_of_its_own(text, first, second):
    res = Scanner(load_ledger(), signatures="regex").scan_text(text)
    assert [(f.family, f.line) for f in res.findings] == [("unknown", first), ("nccl-error", second)]


def test_a_double_spaced_cpp_abort_keeps_its_message():
    res = Scanner(load_ledger(), signatures="regex").scan_text(CPP_DOUBLE_SPACED)
    assert [(f.family, f.line, f.end_line) for f in res.findings] == [("cuda-illegal-memory-access", 3, 5)]


def test_a_blank_line_after_a_cpp_abort_does_not_swallow_what_follows():
    text = "terminate called after throwing an instance of 'c10::Error'\n\nRuntimeError: CUDA error: out of memory\n"
    res = Scanner(load_ledger(), signatures="regex").scan_text(text)
    assert [f.line for f in res.findings] == [1, 3]


def test_a_second_cpp_abort_after_a_blank_line_is_a_failure_of_its_own():
    text = ("terminate called after throwing an instance of 'c10::Error'\n"
            "  what():  CUDA error: an illegal memory access was encountered\n\n"
            "terminate called after throwing an instance of 'std::runtime_error'\n"
            "  what():  NCCL error: unhandled system error\n")
    res = Scanner(load_ledger(), signatures="regex").scan_text(text)
    assert [(f.family, f.line) for f in res.findings] == [("cuda-illegal-memory-access", 1), ("nccl-error", 4)]


# --------------------------------------------------------------------------- torchelastic's failure table

ELASTIC_TABLE = """\
E1203 10:00:01.456000 4242 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -9) local_rank: 1 (pid: 4245) of binary: /env/bin/python
Traceback (most recent call last):
  File "/env/bin/torchrun", line 8, in <module>
    sys.exit(main())
  File "/env/lib/python3.11/site-packages/torch/distributed/run.py", line 919, in main
    run(args)
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
=======================================================
train.py FAILED
-------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
-------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2025-12-03_10:00:01
  host      : node1
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 4245)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 4245
=======================================================
"""


def test_torchelastic_s_table_is_one_failure_with_the_launcher_s_line_above_it():
    res = Scanner(load_ledger(), signatures="regex").scan_text(ELASTIC_TABLE)
    assert [(f.family, f.worker, f.line, f.end_line) for f in res.findings] == [("host-oom-killed", "1", 1, 22)]


def test_a_further_failure_of_the_table_is_named_by_the_verdict():
    second = ("[1]:\n  time      : 2025-12-03_10:00:01\n  host      : node1\n  rank      : 2 (local_rank: 2)\n"
              "  exitcode  : -9 (pid: 4246)\n  error_file: <N/A>\n  traceback : Signal 9 (SIGKILL) received by PID 4246\n")
    text = ELASTIC_TABLE.replace("  <NO_OTHER_FAILURES>\n", second)
    res = Scanner(load_ledger(), signatures="regex").scan_text(text)
    assert {f.family for f in res.findings} == {"host-oom-killed"}
    assert res.verdict.cause.worker == "1"  # the root cause's row, not the first row of the table
    assert [(c.family, c.worker) for c in res.verdict.independent] == [("host-oom-killed", "2")]
