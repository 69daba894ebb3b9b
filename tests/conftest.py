import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: slower tests with real servers (CI runs them too)")
    config.addinivalue_line("markers", "real_llm: opt-in tests against a real local model (JUCODE_REAL_LLM=1)")


def pytest_sessionfinish(session, exitstatus):
    """Fail the run if any engine reported an event outside jucode/events.py's declarations."""
    from harness import PROTOCOL_BUGS
    if PROTOCOL_BUGS:
        import sys
        sys.stderr.write("\nprotocol bugs reported by engines under test:\n  "
                         + "\n  ".join(sorted(set(PROTOCOL_BUGS))) + "\n")
        session.exitstatus = 1


# -- shared fixtures: one scripted model server, engines that are always closed -------------------
_THE_SERVER = object()      # default of engine(server=...): the test's `server` fixture


@pytest.fixture
def server():
    """A scripted OpenAI-compatible server on 127.0.0.1 (tests/fakeserver.py)."""
    from fakeserver import FakeModelServer
    s = FakeModelServer()
    yield s
    s.close()


@pytest.fixture
def engine(request, tmp_path):
    """Factory: ``engine(config=None, *, tmp=None, server=<server fixture>, wait=True, **kw)``.

    Starts an :class:`harness.EngineProc` in ``tmp`` (default ``tmp_path``) with ``config``
    (None means ``{}``; pass ``NO_CONFIG`` to write no config file), waits for the startup batch
    unless ``wait=False``, and closes every engine it started when the test ends. ``kw`` goes
    to EngineProc unchanged (env, cwd, home, args, api_key). ``server=None`` starts without a
    model server.

    Why the server juggling: engines must shut down while the model server still answers, so
    when the test uses ``server`` it is set up before (and torn down after) this fixture; a
    test that never names it gets a private server, made on first need and closed last.
    """
    from harness import NO_CONFIG, EngineProc
    shared = request.getfixturevalue("server") if "server" in request.fixturenames else None
    private: list = []
    started: list = []

    def start(config=None, *, tmp=None, server=_THE_SERVER, wait=True, **kw):
        if server is _THE_SERVER:
            if shared is not None:
                server = shared
            else:
                if not private:
                    from fakeserver import FakeModelServer
                    private.append(FakeModelServer())
                server = private[0]
        cfg = {} if config is None else (None if config is NO_CONFIG else dict(config))
        e = EngineProc(tmp if tmp is not None else tmp_path, server, config=cfg, **kw)
        started.append(e)
        if wait:
            e.wait_startup()
        return e

    yield start
    for e in started:                    # in start order, as the per-file fixtures did
        e.close()
    for s in private:
        s.close()


@pytest.fixture
def eng(engine):
    """The common case: one engine, default test config, started and ready."""
    return engine()
