"""The system prompt: base prompt + runtime facts + project context + skills + mode notes.

Everything the model needs to orient itself is assembled here in a fixed order so prompt
caching on the provider side stays effective across turns (only the date can change).
Chat sessions (cwd inside ``<profile>/chats``) get a general-assistant prompt and no project
instructions, project skills or plan-mode addendum.
"""

from __future__ import annotations

import datetime as _dt
import os
from typing import Iterable, Optional, Sequence

from .instructions import InstructionFile


def _xml_escape(text: str, entities: Optional[dict] = None) -> str:
    """XML text escaping (xml.sax.saxutils would pull urllib and http into startup)."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for k, v in (entities or {}).items():
        text = text.replace(k, v)
    return text
from .skills import Skill

PROMPT_FILE = "prompt.txt"

DEFAULT_BASE_PROMPT = """You are JuCode, a focused coding agent working inside the user's project.

Work carefully and finish what you start:
- Understand the request and the relevant code before you change anything.
- Make the smallest change that fully solves the problem, in the style of the surrounding code.
- Run the project's tests or other checks after changing code, and fix what you broke.
- Never invent results: when a command fails or something is unclear, say so plainly.
- Keep answers short. Lead with what you did and what the user needs to know next.
"""

CHAT_PROMPT = """You are JuCode, a helpful general-purpose assistant for conversation and research.

- Reply in the language the user writes in.
- When a fact may be outdated, niche or uncertain, look it up on the web instead of guessing.
- Split larger research questions into parts; run independent searches in parallel, or hand
  separate threads to subagents, then combine what they found.
- Prefer primary sources (official documentation, papers, original announcements) over summaries.
- Cite the pages you relied on as links, with their publication or update dates when known.
- When the user asks for a report or document, write it as a Markdown file in the current
  directory; pick a new file name rather than overwriting an existing file.
"""

CHAT_TOOL_GUIDANCE = """- Find information with web_search, then open the most promising results with web_fetch.
- Issue independent searches and fetches together in one batch instead of one at a time.
- Use bash for calculations, data wrangling and quick checks rather than doing arithmetic in your head.
- Only write files when the user asks for a document or file."""

PLAN_MODE_ADDENDUM = """<plan_mode>
Plan mode is on: only read-only tools run (reading, listing, searching, read-only shell
commands); anything that would change files or state is refused.
1. Investigate first: read the relevant code, tests and configuration until you understand
   the change that is needed.
2. Then call propose_plan once with a short title and the plan as Markdown containing:
   - Goal & principles: what will be achieved and the constraints that guide it.
   - A table with the columns File | Change | Why.
   - Steps: the ordered implementation steps.
   - Risks: what could go wrong and how it will be handled.
   - Verification: how the result will be checked (tests, commands, manual checks).
3. After propose_plan, stop and wait: the user approves the plan or asks for changes.
</plan_mode>"""

PLAN_MODE_SUBAGENT_NOTE = ("You are running in plan mode: only read-only tools work, so investigate and "
                           "report your findings to the parent agent; do not propose a plan yourself.")

_SKILLS_PREFACE = ("Skills are folders of instructions for specific kinds of tasks. When a request matches "
                   "a skill's description, read its SKILL.md (the location below) before starting and "
                   "follow it; files next to it can be read as well.")


def is_chat_cwd(profile_dir: str, cwd: str) -> bool:
    """True when cwd is ``<profile>/chats`` or inside it."""
    chats = os.path.realpath(os.path.join(profile_dir, "chats"))
    here = os.path.realpath(cwd)
    return here == chats or here.startswith(chats.rstrip(os.sep) + os.sep)


def load_base_prompt(profile_dir: str) -> str:
    """``<profile>/prompt.txt``, created with :data:`DEFAULT_BASE_PROMPT` when missing.

    Raises ``RuntimeError("failed to read prompt.txt: <e>")`` when it exists but can't be read.
    """
    path = os.path.join(profile_dir, PROMPT_FILE)
    if not os.path.exists(path):
        try:
            os.makedirs(profile_dir, exist_ok=True)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(DEFAULT_BASE_PROMPT)
        except OSError:
            return DEFAULT_BASE_PROMPT
        return DEFAULT_BASE_PROMPT
    try:
        with open(path, "r", encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise RuntimeError(f"failed to read prompt.txt: {exc}") from exc


def _create_files_sentence(edit_tools: Sequence[str]) -> str:
    tools = set(edit_tools)
    if "write" in tools:
        return "Create new files with write."
    if "apply_patch" in tools:
        return "Create new files with apply_patch, using a diff from /dev/null."
    if tools:
        return "Create a new file with a short shell command (for example a heredoc), then refine it with the edit tool."
    return "No file-editing tools are enabled; create files through the shell only when the task needs it."


def _edit_sentence(edit_tools: Sequence[str]) -> str:
    tools = [t for t in ("hashline_edit", "str_replace", "apply_patch", "write") if t in set(edit_tools)]
    if not tools:
        return "No edit tools are enabled; change files through the shell when the task requires it."
    if tools[0] == "hashline_edit":
        first = "Edit existing files with hashline_edit, quoting the line hashes from your latest read."
    elif tools[0] == "str_replace":
        first = "Edit existing files with str_replace, quoting enough surrounding text that each oldText matches exactly once."
    elif tools[0] == "apply_patch":
        first = "Edit existing files with apply_patch."
    else:
        first = "Change existing files by rewriting them with write."
    if len(tools) > 1:
        first += " Also available: " + ", ".join(tools[1:]) + "."
    return first


def coding_tool_guidance(edit_tools: Sequence[str]) -> str:
    """How to use the coding tools well (our own wording of upstream's guidance)."""
    lines = [
        "- Explore with read, ls, ripgrep and outline; use the shell to run commands, builds and tests.",
        "- Independent read-only calls can go out together in one batch; keep steps that depend on "
        "each other in order.",
        "- Read a file before you change it.",
        "- " + _create_files_sentence(edit_tools),
        "- " + _edit_sentence(edit_tools),
        "- When a tool call fails, read the error, adjust the call or approach, and continue.",
    ]
    return "\n".join(lines)


def _runtime_context(cwd: str, tool_names: Iterable[str], guidance: str, now: _dt.datetime) -> str:
    return ("<runtime_context>\n"
            f"Current date: {now.strftime('%Y-%m-%d')} UTC\n"
            f"Current working directory: {cwd}\n"
            f"Available tools: {', '.join(tool_names)}\n"
            f"Tool guidance:\n{guidance}\n"
            "</runtime_context>")


def _project_context(instructions: Sequence[InstructionFile]) -> str:
    parts = ["<project_context>"]
    for f in instructions:
        parts.append(f"<project_instructions path=\"{_xml_escape(f.path, {chr(34): '&quot;'})}\">\n"
                     f"{f.content.rstrip()}\n</project_instructions>")
    parts.append("</project_context>")
    return "\n".join(parts)


def _skills_block(skills: Sequence[Skill]) -> str:
    rows = [_SKILLS_PREFACE, "<available_skills>"]
    for s in skills:
        rows.append("<skill><name>" + _xml_escape(s.name) + "</name><description>"
                    + _xml_escape(s.description) + "</description><location>"
                    + _xml_escape(s.path) + "</location></skill>")
    rows.append("</available_skills>")
    return "\n".join(rows)


def build_system_prompt(base_prompt: str, cwd: str, tool_names: Sequence[str],
                        instructions: Sequence[InstructionFile], skills: Sequence[Skill],
                        chat: bool = False, plan_mode: bool = False,
                        edit_tools: Sequence[str] = ("hashline_edit",),
                        sandbox_note: str = "", host_prompt: str = "",
                        now: Optional[_dt.datetime] = None) -> str:
    """Assemble the system prompt.

    ``base_prompt`` is prompt.txt (ignored in chat sessions, which use :data:`CHAT_PROMPT`).
    Chat sessions drop instructions and the plan addendum; pass only user skills for them.
    """
    now = now or _dt.datetime.now(_dt.timezone.utc)
    base = (CHAT_PROMPT if chat else base_prompt).strip()
    guidance = CHAT_TOOL_GUIDANCE if chat else coding_tool_guidance(edit_tools)
    sections = [base] if base else []
    sections.append(_runtime_context(cwd, tool_names, guidance, now))
    if instructions and not chat:
        sections.append(_project_context(instructions))
    if skills:
        sections.append(_skills_block(skills))
    if sandbox_note.strip():
        sections.append(sandbox_note.strip())
    if host_prompt.strip():
        sections.append(host_prompt.strip())
    if plan_mode and not chat:
        sections.append(PLAN_MODE_ADDENDUM)
    return "\n\n".join(sections) + "\n"
