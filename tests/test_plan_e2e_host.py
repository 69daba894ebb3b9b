"""PlanHost and ActionsHost in-process, against a real session journal and action store, for
the paths the subprocess tests cannot reach cheaply (plans known only from the journal after a
resume, /plan argument parsing, store failures)."""

from types import SimpleNamespace

import pytest

from jucode.actions_host import ActionsHost
from jucode.approvals import Approval, ApprovalAnswer, LiveSettings
from jucode.plan_host import PlanHost, _plan_command
from jucode.session.journal import SessionStore


class FakeEngine:
    """Just the engine surface the hosts use, recording what they emit and submit."""

    def __init__(self, tmp_path, store=None, mode="plan"):
        self.events, self.submitted, self.modes = [], [], []
        self.live = LiveSettings(mode=mode)
        self.profile = tmp_path / "profile"
        self.profile.mkdir(exist_ok=True)
        self.cwd = str(tmp_path)
        self.session_id = "s1"
        self.approvals = {}
        self.sessions = SimpleNamespace(store=store, append=lambda kind: store.append(kind) if store else None)
        self.ext = SimpleNamespace(host=lambda name: self.hosts[name])
        self.hosts = {}

    def emit(self, ev):
        self.events.append(ev)

    def submit(self, msg):
        self.submitted.append(msg)

    def set_mode(self, mode):
        self.live.mode = mode
        self.modes.append(mode)


@pytest.fixture
def store(tmp_path):
    s = SessionStore.create(str(tmp_path / "profile"), str(tmp_path))
    yield s
    s.close()


def test_plan_known_only_from_journal_can_be_approved(tmp_path, store):
    store.append({"type": "proposed_plan", "id": "plan-00000000000000aa", "title": "Old",
                  "markdown": "# old\n", "status": "pending"})
    store.append({"type": "proposed_plan", "id": "plan-00000000000000aa", "title": "Old",
                  "markdown": "# old\n", "status": "revising"})
    engine = FakeEngine(tmp_path, store)
    host = engine.hosts["PlanHost"] = PlanHost(engine)
    host.decide("plan-00000000000000aa", "approve", "auto", "ship it")
    assert engine.events[-1] == {"type": "proposed_plan", "id": "plan-00000000000000aa", "title": "Old",
                                 "markdown": "# old\n", "status": "approved"}
    assert engine.modes == ["auto"]
    assert "Their notes: ship it" in engine.submitted[0].content
    host.decide("plan-00000000000000aa", "revise", None, "more")
    assert engine.events[-1] == {"type": "error", "message": "this plan was already approved"}


def test_plan_command_parsing(tmp_path):
    engine = FakeEngine(tmp_path)
    host = engine.hosts["PlanHost"] = PlanHost(engine)
    plan = host.book.add("T", "md")
    _plan_command(engine, f"{plan.id} approve not-a-mode but notes")
    assert engine.modes == ["auto-edit"]
    assert engine.submitted[-1].content.endswith("Their notes: not-a-mode but notes")
    plan2 = host.book.add("T2", "md2")
    _plan_command(engine, f"{plan2.id} approve full-auto")      # old alias of full-access
    assert engine.modes[-1] == "full-access"
    assert "Their notes" not in engine.submitted[-1].content
    _plan_command(engine, f"{plan.id} bogus")
    assert engine.events[-1]["message"].startswith("usage: /plan <id>")


def test_propose_requires_plan_mode_on_main_thread(tmp_path):
    engine = FakeEngine(tmp_path, mode="manual")
    host = PlanHost(engine)
    assert host.tool_specs() == []
    assert host.propose("c1", "T", "md") == {"error": "propose_plan is only available in plan mode"}
    engine.live.mode = "plan"
    assert [s.name for s in host.tool_specs()] == ["propose_plan"]
    host.internal({"type": "_plan_draft_id", "call_id": "c1", "id": "plan-00000000000000bb"})
    assert host.propose("c1", "T", "md")["id"] == "plan-00000000000000bb"
    # A reused draft id never overwrites an existing plan.
    host.internal({"type": "_plan_draft_id", "call_id": "c2", "id": "plan-00000000000000bb"})
    assert host.propose("c2", "T", "md")["id"] != "plan-00000000000000bb"


def test_defer_store_failure_denies_instead_of_running(tmp_path):
    engine = FakeEngine(tmp_path, mode="manual")
    host = ActionsHost(engine)
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    host.store.profile_dir = str(blocker)
    host.store.path = str(blocker / "deferred_actions.json")
    a = Approval("c1", "bash", "ls", '{"command":"ls"}', "shell")
    host.defer_approval(a)
    assert a.answer == ApprovalAnswer("deny")
    assert engine.events[-1]["message"].startswith("failed to save deferred action:")
