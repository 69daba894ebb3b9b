import os
import sys

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
