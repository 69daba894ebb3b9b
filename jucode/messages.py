"""User messages: the queued form, attachments, and the canonical user item sent to the model."""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass, field
from typing import Optional

IMAGE_MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
              ".webp": "image/webp"}
MAX_IMAGE_BYTES = 1024 * 1024


@dataclass
class QueuedMessage:
    """A message waiting for (or starting) a turn.

    ``content`` is what the user typed and what the echo shows; ``model_text`` is what the model
    receives (differs for custom/skill/MCP commands, whose expansion is sent).
    """

    content: str
    images: list = field(default_factory=list)
    files: list = field(default_factory=list)
    model_text: Optional[str] = None
    kind: str = "user"                  # user | command | deferred | plan

    @property
    def text_for_model(self) -> str:
        text = self.content if self.model_text is None else self.model_text
        if self.files:
            lines = [f'[Attached file "{os.path.basename(p)}" is saved at: {p}]' for p in self.files]
            text = (text + "\n\n" if text else "") + "\n".join(lines)
        return text


def check_image(path: str) -> Optional[str]:
    """Why an image cannot be attached, or None when it can."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in IMAGE_MIME:
        return f"{path}: not a supported image"
    try:
        size = os.path.getsize(path)
    except OSError as e:
        return f"{path}: {e.strerror or e}"
    if not os.path.isfile(path):
        return f"{path}: not a file"
    if size > MAX_IMAGE_BYTES:
        return f"{path}: image is too large to attach"
    return None


def image_part(path: str) -> Optional[dict]:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_IMAGE_BYTES + 1)
    except OSError:
        return None
    mime = IMAGE_MIME.get(os.path.splitext(path)[1].lower(), "image/png")
    return {"type": "input_image", "image_url": f"data:{mime};base64,{base64.b64encode(data).decode()}"}


def user_item(text: str, images: list | None = None) -> dict:
    parts: list = [{"type": "input_text", "text": text}]
    for p in images or []:
        part = image_part(p)
        if part:
            parts.append(part)
    return {"role": "user", "content": parts}


def normalize_paths(value, cwd: str) -> list:
    """Keep string entries only, made absolute against cwd."""
    if not isinstance(value, list):
        return []
    out = []
    for p in value:
        if isinstance(p, str) and p.strip():
            p = os.path.expanduser(p.strip())
            out.append(p if os.path.isabs(p) else os.path.join(cwd, p))
    return out
