"""Plan mode: what may run while the model is only allowed to plan, and the plan objects.

Plan mode lets the model investigate (reads, searches, provably read-only shell commands)
and then deliver a Markdown plan through ``propose_plan``. This module is pure logic, no
engine state: the turn loop asks :func:`plan_mode_refusal` before every call, feeds the
streamed ``propose_plan`` arguments to a :class:`PartialPlanParser` (``plan_draft`` events),
and keeps the proposed plans in a :class:`PlanBook` that ``approve_plan`` validates against.

The shell check is deliberately conservative: anything it cannot prove harmless is refused,
because a false "read-only" lets a model write files in a mode the user chose to be safe.
"""

from __future__ import annotations

import json
import re
import os
import shlex
import time
from dataclasses import dataclass, field
from typing import Optional

# --------------------------------------------------------------------------- tool classes

#: Tools that always run in plan mode (they cannot change the workspace).
ALWAYS_ALLOWED = frozenset({
    "read", "ls", "ripgrep", "outline", "web_fetch", "web_search", "get_goal",
    "spawn_agent", "wait_agent", "list_agents", "send_message", "close_agent", "propose_plan",
})

#: Shell tool names (aliases dispatch to the same runner).
SHELL_TOOLS = frozenset({"bash", "execute", "exec_command", "shell_command"})

PLAN_ID_PREFIX = "plan-"

# --------------------------------------------------------------------------- read-only shell test

# Harmless redirections removed before looking for ">". Only when the target ends there, so
# ">/dev/nullx" (a real file) is not mistaken for the null device.
_HARMLESS_REDIRECTS = re.compile(r"(?:2>&1|&>\s*/dev/null|2>\s*/dev/null|>\s*/dev/null)(?=$|[\s;|&)])")
_REJECTED_SUBSTRINGS = (">", "`", "\n", "$(", "<(", "${")

_ALLOWED_COMMANDS = frozenset(
    "cat head tail wc ls pwd echo printf grep egrep fgrep rg find tree file stat du df which "
    "whereis sort cut tr diff cmp comm nl basename dirname realpath readlink uname whoami id jq "
    "true false cd".split()
)

# Per command: exact forbidden tokens, forbidden prefixes (an option spelled "--x=..." or a
# family like "-fprint*"), long options GNU getopt would accept abbreviated, and short option
# letters forbidden anywhere in a cluster such as "-uo".
_FIND_FORBIDDEN = ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fls")
_FIND_FORBIDDEN_PREFIX = ("-fprint",)


@dataclass(frozen=True)
class _OptRules:
    long: tuple = ()          # forbidden long options (also matched as "--x=v" and abbreviations)
    short: str = ""           # forbidden short letters (anywhere in a "-abc" cluster)
    long_prefix: tuple = ()   # any option starting with one of these is forbidden
    abbreviations: bool = True


_OPTION_RULES = {
    "sort": _OptRules(long=("--output", "--compress-program"), short="o"),
    "rg": _OptRules(long=("--hostname-bin",), long_prefix=("--pre",), abbreviations=False),
    "tree": _OptRules(long=("--output",), short="oR"),
    "file": _OptRules(long=("--compile",), short="C"),
}

_GIT_PLAIN_SUBCOMMANDS = frozenset(
    "status diff log show blame ls-files ls-tree rev-parse describe shortlog grep cat-file "
    "rev-list show-ref merge-base name-rev".split()
)
_GIT_FORBIDDEN_LONG = ("--output", "--ext-diff", "--textconv", "--filters")
_GIT_BRANCH_OPTIONS = frozenset({"-a", "-r", "-v", "-vv", "--list", "--all", "--remotes",
                                 "--show-current", "--verbose"})
_GIT_CONFIG_ACTIONS = frozenset({"--get", "--get-all", "--get-regexp", "--list", "-l"})
_GIT_CONFIG_MODIFIERS = frozenset({"--global", "--local", "--system", "--worktree", "--show-origin",
                                   "--show-scope", "--null", "-z", "--name-only", "--includes",
                                   "--no-includes", "--bool", "--int", "--path", "--bool-or-int"})


def _long_name(token: str) -> str:
    return token.split("=", 1)[0]


def _is_short_cluster(token: str) -> bool:
    return token.startswith("-") and not token.startswith("--") and len(token) > 1


def _long_forbidden(token: str, forbidden: tuple, abbreviations: bool) -> bool:
    if not token.startswith("--") or token == "--":
        return False
    name = _long_name(token)
    for bad in forbidden:
        if name == bad:
            return True
        if abbreviations and len(name) > 2 and bad.startswith(name):
            return True
    return False


def _options_ok(cmd: str, args: list) -> bool:
    if cmd == "find":
        for tok in args:
            if tok in _FIND_FORBIDDEN or tok.startswith(_FIND_FORBIDDEN_PREFIX):
                return False
        return True
    rules = _OPTION_RULES.get(cmd)
    if rules is None:
        return True
    for tok in args:
        if tok == "--":
            break
        if _long_forbidden(tok, rules.long, rules.abbreviations):
            return False
        if rules.long_prefix and tok.startswith(rules.long_prefix):
            return False
        if rules.short and _is_short_cluster(tok) and any(ch in tok[1:] for ch in rules.short):
            return False
    return True


def _git_ok(args: list) -> bool:
    """``args`` follow the word ``git``. Global options other than -C/--no-pager/-P are refused
    (``-c`` could install an alias or pager that runs anything)."""
    i = 0
    while i < len(args):
        tok = args[i]
        if tok == "-C":
            if i + 1 >= len(args):
                return False
            i += 2
        elif tok in ("--no-pager", "-P"):
            i += 1
        else:
            break
    if i >= len(args):
        return False
    sub, rest = args[i], args[i + 1:]
    for tok in rest:
        # Abbreviations count too: git accepts "--textc" for "--textconv". This also refuses
        # real options that merely look like one ("--text", "--filter"): safe side.
        if tok == "-o" or _long_forbidden(tok, _GIT_FORBIDDEN_LONG, True):
            return False
    if sub == "grep":
        return not any(t.startswith("--open-files-in-pager") or (_is_short_cluster(t) and "O" in t)
                       for t in rest)
    if sub in _GIT_PLAIN_SUBCOMMANDS:
        return True
    if sub == "branch":
        return all(t in _GIT_BRANCH_OPTIONS for t in rest)
    if sub == "remote":
        return all(t == "-v" for t in rest)
    if sub == "tag":
        if not rest:
            return True
        listing = any(t in ("-l", "--list") for t in rest)
        return listing and all(t in ("-l", "--list") or not t.startswith("-") for t in rest)
    if sub == "stash":
        return bool(rest) and rest[0] == "list"
    if sub == "reflog":
        return not rest or rest[0] == "show"
    if sub == "config":
        options = [t for t in rest if t.startswith("-")]
        if not any(t in _GIT_CONFIG_ACTIONS for t in options):
            return False
        return all(t in _GIT_CONFIG_ACTIONS or t in _GIT_CONFIG_MODIFIERS
                   or _long_name(t) == "--type" for t in options)
    return False


def _segment_ok(segment: str) -> bool:
    try:
        words = shlex.split(segment, posix=True)
    except ValueError:       # unbalanced quotes (e.g. a quoted ";" or "|" split the segment)
        return False
    if not words:
        return True
    cmd, args = words[0], words[1:]
    if "=" in cmd or "/" in cmd:
        return False
    if cmd == "git":
        return _git_ok(args)
    if cmd not in _ALLOWED_COMMANDS:
        return False
    return _options_ok(cmd, args)


def is_read_only_command(cmd: str) -> bool:
    """True only when every part of ``cmd`` is a known read-only command.

    Steps: drop harmless redirections (``2>&1``, ``&>/dev/null``, ``2>/dev/null``,
    ``>/dev/null``); refuse any remaining ``>``, backtick, newline, ``$(``, ``<(`` or ``${``;
    turn ``&&``/``||`` into ``;`` and refuse any other ``&``; split on ``;`` and ``|``; then
    check each segment's command word and its options.
    """
    if not isinstance(cmd, str) or not cmd.strip():
        return False
    text = _HARMLESS_REDIRECTS.sub(" ", cmd)
    if any(bad in text for bad in _REJECTED_SUBSTRINGS):
        return False
    text = text.replace("&&", ";").replace("||", ";")
    if "&" in text:
        return False
    segments = re.split(r"[;|]", text)
    if not any(seg.strip() for seg in segments):
        return False
    return all(_segment_ok(seg) for seg in segments)


# --------------------------------------------------------------------------- refusals

def _shell_refusal(command: str) -> dict:
    return {"error": (
        f"plan mode: `{command}` was not run because it is not a known read-only command. "
        "Only inspection commands (cat, ls, grep, rg, find, git status/log/diff/show, ...) without "
        "writes, redirections or command substitution run while planning. Gather what you need "
        "with read-only tools, then hand in your plan with propose_plan."
    )}


def _tool_refusal(name: str) -> dict:
    return {"error": (
        f"plan mode: {name} was not run. You are in plan mode, where nothing may be changed: "
        "only reading, searching and read-only commands are allowed. Describe this change in "
        "your plan and submit it with propose_plan; it will be carried out once the user approves."
    )}


def _as_args(args) -> Optional[dict]:
    if isinstance(args, dict):
        return args
    if isinstance(args, str):
        try:
            parsed = json.loads(args or "{}")
        except ValueError:
            return None
        return parsed if isinstance(parsed, dict) else None
    return None if args is not None else {}


def plan_mode_refusal(name: str, args, read_only_hint: bool = False,
                      mcp_read_only: Optional[bool] = None) -> Optional[dict]:
    """The error result for a call that may not run in plan mode, or None when it may run.

    ``args`` is the parsed argument object (a raw JSON string is accepted too).
    ``read_only_hint`` is the server's ``readOnlyHint`` for an ``mcp__*`` tool (``mcp_read_only``
    is an older spelling of the same flag). The synthetic
    ``mcp__<s>__list_resources`` / ``read_resource`` tools only read, so they always run.
    """
    if mcp_read_only is not None:
        read_only_hint = mcp_read_only
    if name in ALWAYS_ALLOWED:
        return None
    parsed = _as_args(args)
    if name in SHELL_TOOLS:
        parsed = parsed or {}
        command = parsed.get("command") if name != "exec_command" else parsed.get("cmd")
        if not isinstance(command, str):
            command = parsed.get("cmd") or parsed.get("command") or ""
            command = command if isinstance(command, str) else ""
        if parsed.get("escalate") is True or not is_read_only_command(command):
            return _shell_refusal(command)
        return None
    if name.startswith("mcp__"):
        if read_only_hint or name.endswith(("__list_resources", "__read_resource")):
            return None
        return _tool_refusal(name)
    if name == "write_stdin":
        parsed = parsed or {}
        if not parsed.get("text") and not parsed.get("chars"):
            return None
        return _tool_refusal(name)
    if name == "checkpoint":
        if parsed is not None and parsed.get("action") == "list":
            return None
        return _tool_refusal(name)
    return _tool_refusal(name)


# --------------------------------------------------------------------------- plan_draft parsing

_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class PartialPlanParser:
    """Incrementally pulls the top-level ``title`` and ``plan`` strings out of streamed JSON.

    ``feed(chunk)`` returns ``(title_so_far, plan_append)``; the appends concatenate to exactly
    the ``plan`` string the complete JSON decodes to. Escapes cut across chunks are held back
    until complete, and a ``\\uD83D`` high surrogate waits for its low half so the pair is
    emitted as one character (a lone one is emitted as-is when the string closes, like
    ``json.loads``). Everything else in the object (nested values, other keys) is skipped.
    """

    FIELDS = ("title", "plan")

    def __init__(self) -> None:
        self.values: dict = {f: "" for f in self.FIELDS}
        self._emitted_plan = 0
        self._depth = 0
        self._in_string = False
        self._string_role = ""      # "key", "value" (a wanted field), "skip"
        self._key = ""
        self._expect = "key"        # at depth 1: "key" | "colon" | "value" | "comma"
        self._value_field = ""
        self._escape = ""           # pending escape text, starting with a backslash
        self._high = ""             # pending high surrogate
        self._nested_string = False

    @property
    def title(self) -> str:
        return self.values["title"]

    @property
    def plan(self) -> str:
        return self.values["plan"]

    def feed(self, chunk: str) -> tuple:
        for ch in chunk:
            self._step(ch)
        plan = self.values["plan"]
        append = plan[self._emitted_plan:]
        self._emitted_plan = len(plan)
        return self.values["title"], append

    # -- string content

    def _put(self, text: str) -> None:
        if self._string_role == "key":
            self._key += text
        elif self._string_role == "value":
            self.values[self._value_field] += text

    def _put_char(self, ch: str) -> None:
        code = ord(ch)
        if self._high:
            high, self._high = self._high, ""
            if 0xDC00 <= code <= 0xDFFF:
                self._put(chr(0x10000 + ((ord(high) - 0xD800) << 10) + (code - 0xDC00)))
                return
            self._put(high)
        if 0xD800 <= code <= 0xDBFF:
            self._high = ch
        else:
            self._put(ch)

    def _string_char(self, ch: str) -> None:
        if self._escape:
            self._escape += ch
            esc = self._escape
            if esc[1] == "u":
                if len(esc) < 6:
                    return
                self._escape = ""
                try:
                    self._put_char(chr(int(esc[2:6], 16)))
                except ValueError:
                    self._put_char_literal(esc)
                return
            self._escape = ""
            self._put_char(_ESCAPES.get(esc[1], esc[1]))
            return
        if ch == "\\":
            self._escape = "\\"
            return
        if ch == '"':
            if self._high:
                self._put(self._high)
                self._high = ""
            self._end_string()
            return
        self._put_char(ch)

    def _put_char_literal(self, text: str) -> None:
        for c in text:
            self._put_char(c)

    def _end_string(self) -> None:
        self._in_string = False
        role, self._string_role = self._string_role, ""
        if role == "key":
            self._expect = "colon"
        elif self._depth == 1:
            self._expect = "comma"

    # -- structure

    def _step(self, ch: str) -> None:
        if self._in_string:
            self._string_char(ch)
            return
        if self._nested_string:
            self._skip_nested_string(ch)
            return
        if self._depth > 1:
            if ch == '"':
                self._nested_string = True
            elif ch in "{[":
                self._depth += 1
            elif ch in "}]":
                self._depth -= 1
                if self._depth == 1:
                    self._expect = "comma"
            return
        if ch in " \t\r\n":
            return
        if self._depth == 0:
            if ch == "{":
                self._depth = 1
                self._expect = "key"
            return
        # depth 1: inside the top-level object
        if ch == '"':
            self._in_string = True
            if self._expect == "key":
                self._string_role, self._key = "key", ""
            elif self._expect == "value" and self._key in self.FIELDS:
                self._string_role, self._value_field = "value", self._key
                self.values[self._key] = ""
                if self._key == "plan":
                    self._emitted_plan = 0
            else:
                self._string_role = "skip"
        elif ch == ":":
            self._expect = "value"
        elif ch == ",":
            self._expect = "key"
        elif ch in "{[":
            self._depth += 1
        elif ch == "}":
            self._depth = 0
        elif self._expect == "value":
            self._expect = "comma"   # number/true/false/null: skipped until the comma

    def _skip_nested_string(self, ch: str) -> None:
        if self._escape:
            self._escape = ""
        elif ch == "\\":
            self._escape = "\\"
        elif ch == '"':
            self._nested_string = False


# --------------------------------------------------------------------------- plans

def new_plan_id() -> str:
    """``plan-`` + 16 hex digits (8 random bytes), upstream's id shape."""
    return PLAN_ID_PREFIX + os.urandom(8).hex()


PLAN_PENDING = "pending"
PLAN_APPROVED = "approved"
PLAN_REVISING = "revising"

DEFAULT_APPROVE_MODE = "auto-edit"


class PlanError(ValueError):
    """An ``approve_plan`` request that cannot be honoured; ``str(e)`` is the event message."""


@dataclass
class ProposedPlan:
    id: str
    title: str
    markdown: str
    status: str = PLAN_PENDING
    created_at: float = field(default_factory=time.time)

    def event_fields(self) -> dict:
        """Fields of the ``proposed_plan`` event."""
        return {"id": self.id, "title": self.title, "markdown": self.markdown, "status": self.status}

    def transcript_item(self) -> dict:
        return {"role": "plan", "id": self.id, "title": self.title, "content": self.markdown,
                "status": self.status}


def propose_plan_result(plan_id: str) -> dict:
    """What the model gets back from a successful propose_plan call."""
    return {"status": "proposed", "id": plan_id,
            "note": "The plan is shown to the user. Stop now and wait for their approval or feedback."}


def approve_message(plan: ProposedPlan, notes: str = "") -> str:
    text = (f"The user approved your plan \"{plan.title}\". Implement it now, step by step. "
            "Keep update_plan current as you go, and verify the result (build, tests) before "
            "you finish.")
    if notes.strip():
        text += f"\n\nTheir notes: {notes.strip()}"
    return text


def revise_message(plan: ProposedPlan, feedback: str) -> str:
    return (f"The user wants changes to your plan \"{plan.title}\" before approving it.\n\n"
            f"Their feedback: {feedback.strip()}\n\n"
            "Stay in plan mode: investigate further if needed, then submit a complete revised "
            "plan (not just the differences) with propose_plan.")


@dataclass
class PlanDecision:
    """A validated approve_plan request."""

    plan: ProposedPlan
    decision: str          # "approve" | "revise"
    mode: str              # the approval mode to switch to
    message: str           # the user message that starts the follow-up turn


@dataclass
class PlanBook:
    """Proposed plans of one session, by id, with their status transitions.

    pending → approved (final) or revising; revising → approved or revising again. A
    revised plan arrives as a new proposed plan with a new id.
    """

    plans: dict = field(default_factory=dict)

    def add(self, title: str, markdown: str, plan_id: str = "") -> ProposedPlan:
        plan = ProposedPlan(id=plan_id or new_plan_id(), title=title, markdown=markdown)
        self.plans[plan.id] = plan
        return plan

    def get(self, plan_id: str) -> Optional[ProposedPlan]:
        return self.plans.get(plan_id)

    def decide(self, plan_id, decision, mode=None, feedback=None) -> PlanDecision:
        """Validate and apply an approve_plan op. Raises :class:`PlanError` (nothing changes).

        ``mode`` must already be a canonical mode name (parsing/aliases belong to config).
        """
        if not isinstance(plan_id, str) or not plan_id.strip():
            raise PlanError("approve_plan requires id")
        if decision not in ("approve", "revise"):
            raise PlanError("approve_plan requires decision: approve or revise")
        plan = self.plans.get(plan_id.strip())
        if plan is None:
            raise PlanError(f"unknown plan: {plan_id.strip()}")
        if plan.status == PLAN_APPROVED:
            raise PlanError("this plan was already approved")
        notes = feedback if isinstance(feedback, str) else ""
        if decision == "approve":
            target = mode or DEFAULT_APPROVE_MODE
            if target == "plan":
                raise PlanError("an approved plan cannot keep plan mode; choose manual, "
                                "auto-edit, auto or full-access")
            plan.status = PLAN_APPROVED
            return PlanDecision(plan, decision, target, approve_message(plan, notes))
        if not notes.strip():
            raise PlanError("revising a plan needs feedback")
        plan.status = PLAN_REVISING
        return PlanDecision(plan, decision, "plan", revise_message(plan, notes))
