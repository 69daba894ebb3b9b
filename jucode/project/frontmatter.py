"""A tiny front-matter reader shared by skills and custom commands.

SKILL.md and command files start with an optional ``---`` block of ``key: value`` lines. We
only need flat string keys (name, description), so a full YAML parser would be a heavy
dependency for no gain; this reader also accepts the two multi-line forms people actually
write (``key: >`` / ``key: |`` followed by indented lines).
"""

from __future__ import annotations


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        inner = value[1:-1]
        if value[0] == '"':
            inner = inner.replace('\\"', '"').replace("\\\\", "\\")
        else:
            inner = inner.replace("''", "'")
        return inner
    return value


def split_frontmatter(text: str) -> tuple[dict[str, str], str]:
    """Return ``(fields, body)``. Text without a closed front-matter block is all body."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text
    end = None
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            end = i
            break
    if end is None:
        return {}, text
    fields: dict[str, str] = {}
    key = None
    block: list[str] = []
    folded = False

    def flush() -> None:
        if key is not None and block is not None:
            parts = [b.strip() for b in block]
            fields[key] = (" " if folded else "\n").join(p for p in parts if p).strip()

    i = 1
    while i < end:
        raw = lines[i].rstrip("\r\n")
        i += 1
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        if raw[:1] in (" ", "\t") and key is not None:
            block.append(raw)
            continue
        flush()
        key, block, folded = None, [], False
        if ":" not in raw:
            continue
        name, _, value = raw.partition(":")
        name = name.strip()
        value = value.strip()
        if value in (">", ">-", "|", "|-", ">+", "|+"):
            key, block, folded = name, [], value.startswith(">")
            continue
        fields[name] = _unquote(value)
    flush()
    return fields, "".join(lines[end + 1:])


def first_content_line(body: str, strip_heading: bool = False) -> str:
    """The first non-empty line of ``body`` (optionally without leading ``#`` markers)."""
    for line in body.splitlines():
        line = line.strip()
        if strip_heading:
            line = line.lstrip("#").strip()
        if line:
            return line
    return ""
