"""Offline BPE rank files for the token counter (see :mod:`jucode.tokens`).

The ``*.tiktoken.gz`` files here are OpenAI's published BPE ranks, converted from a registry
package by :mod:`jucode.tokendata.convert` (run by ``.ci/install-llm.sh``). They are data, not
code, and are only trusted after their sha256 matches the hash tiktoken itself expects.
"""

from __future__ import annotations

import os

DATA_DIR = os.path.dirname(os.path.abspath(__file__))

# encoding name -> (sha256 tiktoken expects, cache file name tiktoken looks up = sha1(url))
ENCODINGS: dict[str, tuple[str, str]] = {
    "o200k_base": ("446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
                   "fb374d419588a4632f3f557e76b4b70aebbca790"),
    "cl100k_base": ("223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
                    "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"),
}


def packaged_path(name: str) -> str:
    return os.path.join(DATA_DIR, f"{name}.tiktoken.gz")
