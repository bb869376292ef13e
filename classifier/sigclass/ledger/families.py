"""The family ids the shipped pack must define (the shared contract)."""

CONTRACT_IDS = (
    "vllm-h100-prefix-cache-ima", "cuda-illegal-memory-access", "cuda-oom", "cuda-device-side-assert",
    "cuda-env-mismatch", "gpu-hardware-fault", "nccl-error", "nccl-watchdog-timeout", "dist-port-in-use",
    "process-killed-by-signal", "host-oom-killed", "shm-exhausted", "disk-full", "segfault",
    "hf-hub-unreachable", "import-error", "nan-loss", "ray-actor-died", "vllm-engine-dead",
    "vllm-kv-cache-insufficient", "vllm-orphan-gpu-memory", "vllm-engine-hang", "tokenizer-reload-per-call",
)
