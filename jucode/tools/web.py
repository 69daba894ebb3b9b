"""``web_fetch`` with the local engine: plain HTTP(S) GET, capped, HTML reduced to text.

``requests`` is imported inside the call: the engine's startup path must not pay for it.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from typing import List, Optional
from urllib.parse import urljoin, urlsplit

from .base import ToolContext, ToolError
from .common import get_int

MAX_FETCH = 2 * 1024 * 1024
MAX_REDIRECTS = 5
SNIPPET = 2048
SKIP_TAGS = {"script", "style", "head", "nav", "footer", "noscript", "template"}
BLOCK_TAGS = {"p", "div", "br", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article",
              "ul", "ol", "table", "pre", "blockquote", "hr", "header", "main", "li"}


class _TextExtractor(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: List[str] = []
        self.title = ""
        self._in_title = False
        self._skip = 0
        self._href: Optional[str] = None
        self._link_text: List[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "title":
            self._in_title = True
        if tag in SKIP_TAGS:
            self._skip += 1
            return
        if self._skip:
            return
        if tag in BLOCK_TAGS:
            self.parts.append("\n")
        if tag == "li":
            self.parts.append("- ")
        if tag == "a":
            self._href = dict(attrs).get("href")
            self._link_text = []

    def handle_endtag(self, tag):
        if tag == "title":
            self._in_title = False
        if tag in SKIP_TAGS:
            self._skip = max(0, self._skip - 1)
            return
        if self._skip:
            return
        if tag == "a" and self._href is not None:
            text = " ".join("".join(self._link_text).split())
            self.parts.append(f"{text} ({self._href})" if text else "")
            self._href = None
        elif tag in BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        if self._skip:
            return
        if self._href is not None:
            self._link_text.append(data)
        else:
            self.parts.append(data)


def html_to_text(markup: str) -> str:
    parser = _TextExtractor()
    parser.feed(markup)
    parser.close()
    raw = html.unescape("".join(parser.parts))
    lines = [" ".join(line.split()) for line in raw.split("\n")]
    body = "\n".join(line for line in lines if line)
    title = " ".join(parser.title.split())
    return f"{title}\n\n{body}" if title else body


def _validate(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        raise ToolError("only http:// and https:// URLs are supported")
    if not parts.hostname:
        raise ToolError("URL has no host")
    if parts.username or parts.password:
        raise ToolError("URLs with embedded credentials are not supported")


def run_web_fetch(args: dict, ctx: ToolContext) -> dict:
    url = args.get("url")
    if not isinstance(url, str) or not url.strip():
        raise ToolError("missing url")
    url = url.strip()
    cap = min(MAX_FETCH, get_int(args, "max_bytes", MAX_FETCH) or MAX_FETCH)
    raw = args.get("raw") is True
    _validate(url)
    import requests  # lazy: heavy import

    session = requests.Session()
    session.trust_env = False
    try:
        for _ in range(MAX_REDIRECTS + 1):
            resp = session.get(url, stream=True, allow_redirects=False, timeout=(10, 30),
                               headers={"User-Agent": "jucode-web-fetch"})
            if resp.is_redirect and resp.headers.get("location"):
                nxt = urljoin(url, resp.headers["location"])
                resp.close()
                _validate(nxt)
                url = nxt
                continue
            break
        else:
            raise ToolError(f"too many redirects (more than {MAX_REDIRECTS})")
        body, capped = bytearray(), False
        for chunk in resp.iter_content(65536):
            if ctx.interrupt.is_set():
                resp.close()
                raise ToolError("interrupted")
            body += chunk
            if len(body) >= cap:
                capped = len(body) > cap or resp.raw.read(1) != b""
                del body[cap:]
                break
        resp.close()
    except requests.RequestException as exc:
        raise ToolError(f"fetch failed: {exc}")
    ctype = resp.headers.get("content-type", "")
    data = bytes(body)
    if resp.status_code >= 400:
        return {"url": url, "status": resp.status_code,
                "error": f"HTTP {resp.status_code} {resp.reason or ''}".rstrip(),
                "body_snippet": data[:SNIPPET].decode("utf-8", "replace")}
    out = {"url": url, "status": resp.status_code, "content_type": ctype, "bytes": len(data)}
    textual = (not ctype or ctype.startswith("text/") or "json" in ctype or "xml" in ctype
               or "javascript" in ctype) and b"\0" not in data[:4096]
    if not textual:
        out["note"] = "binary content omitted; only text responses are returned"
    else:
        charset = re.search(r"charset=([\w-]+)", ctype)
        try:
            text = data.decode(charset.group(1) if charset else "utf-8", "replace")
        except LookupError:
            text = data.decode("utf-8", "replace")
        if not raw and ("html" in ctype or text.lstrip()[:15].lower().startswith(("<!doctype html", "<html"))):
            text = html_to_text(text)
        out["text"] = text
    if capped:
        out["network_truncated"] = True
        out["note"] = f"response was cut at {cap} bytes"
    return out
